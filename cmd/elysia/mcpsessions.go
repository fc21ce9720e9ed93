package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/elysia-go/elysia/mcpendpoint"
	"github.com/elysia-go/elysia/store"
)

// storeSessions is the mcpendpoint.SessionStore of the replicas sharing a
// PostgreSQL database: the store's mcp_sessions table.
type storeSessions struct{ s *store.Store }

var _ mcpendpoint.SessionStore = storeSessions{}

func (ss storeSessions) PutSession(ctx context.Context, id, user string, s mcpendpoint.SharedSession, idle time.Duration) error {
	return sessionErr(ss.s.PutMCPSession(ctx, id, user,
		store.MCPSession{ProtocolVersion: s.ProtocolVersion, Init: string(s.Init), LogLevel: s.LogLevel}, idle))
}

func (ss storeSessions) Session(ctx context.Context, id, user string, idle time.Duration) (mcpendpoint.SharedSession, error) {
	m, err := ss.s.MCPSession(ctx, id, user, idle)
	if err != nil {
		return mcpendpoint.SharedSession{}, sessionErr(err)
	}
	return mcpendpoint.SharedSession{ProtocolVersion: m.ProtocolVersion, Init: []byte(m.Init), LogLevel: m.LogLevel}, nil
}

func (ss storeSessions) TouchSession(ctx context.Context, id, user, level string, idle time.Duration) error {
	return sessionErr(ss.s.TouchMCPSession(ctx, id, user, level, idle))
}

func (ss storeSessions) DeleteSession(ctx context.Context, id, user string) error {
	return sessionErr(ss.s.DeleteMCPSession(ctx, id, user))
}

// sessionErr makes the store's ErrNotFound the endpoint's
// ErrUnknownSession.
func sessionErr(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%w: %w", mcpendpoint.ErrUnknownSession, err)
	}
	return err
}
