package store

import (
	"context"
	"database/sql"
)

// dbtx is what a call runs its statements on: the pool, or one connection
// of it.
type dbtx interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
}

var (
	_ dbtx = (*sql.DB)(nil)
	_ dbtx = (*sql.Conn)(nil)
)
