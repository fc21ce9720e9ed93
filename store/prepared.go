package store

import (
	"context"
	"database/sql"
)

// txExec runs query (with ? placeholders) in tx, from its prepared
// statement when [Store.prepare] made one: on SQLite the driver would
// otherwise parse the SQL again for every call, a third of the CPU a
// query's save costs. (pgx caches each connection's statements itself.)
func (s *Store) txExec(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	if st := s.preparedStmt(query); st != nil {
		return tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return tx.ExecContext(ctx, s.q(query), args...)
}

// txQueryRow is txExec for a query that returns one row.
func (s *Store) txQueryRow(ctx context.Context, tx *sql.Tx, query string, args ...any) *sql.Row {
	if st := s.preparedStmt(query); st != nil {
		return tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return tx.QueryRowContext(ctx, s.q(query), args...)
}

// queryRow runs query, which returns one row, on db outside a
// transaction, from a statement prepared once (see txExec) on SQLite.
func (s *Store) queryRow(ctx context.Context, db dbtx, query string, args ...any) *sql.Row {
	s.prepare(ctx, query)
	if st := s.preparedStmt(query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return db.QueryRowContext(ctx, s.q(query), args...)
}

// preparedStmt returns the statement prepare made of query, or nil.
func (s *Store) preparedStmt(query string) *sql.Stmt {
	if s.dialect != dialectSQLite {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stmts[query]
}

// prepare prepares the queries not prepared yet, on SQLite, once per
// Store; the statements live until the database is closed. It must be
// called outside a transaction: SQLite has one connection, which a
// transaction holds. A query that fails to prepare is left to fail when
// it runs.
func (s *Store) prepare(ctx context.Context, queries ...string) {
	if s.dialect != dialectSQLite {
		return
	}
	for _, q := range queries {
		if s.preparedStmt(q) != nil {
			continue
		}
		st, err := s.db.PrepareContext(ctx, s.q(q))
		if err != nil {
			continue
		}
		s.mu.Lock()
		if s.stmts == nil {
			s.stmts = make(map[string]*sql.Stmt)
		}
		if s.stmts[q] == nil {
			s.stmts[q], st = st, nil
		}
		s.mu.Unlock()
		if st != nil {
			_ = st.Close() // another caller prepared it first; nothing ran on this one
		}
	}
}
