package session

import (
	"context"
	"errors"
	"log/slog"
	"os"
)

// closedWriteHandler is the stdio transport's log handler. mcp-go answers a
// server's request (roots/list, say) on a goroutine of its own, and logs an
// error when that answer meets a stdin the session has already closed: a
// server asking just as the session ends is expected, not an error. Once
// the session is dead, a record whose error is os.ErrClosed is logged at
// debug level; everything else passes unchanged.
type closedWriteHandler struct {
	slog.Handler
	dead <-chan struct{}
}

// Handle demotes a write to the closed stdin of a dead session to debug.
func (h closedWriteHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level > slog.LevelDebug && h.closedWrite(r) {
		if !h.Enabled(ctx, slog.LevelDebug) {
			return nil
		}
		r = r.Clone()
		r.Level = slog.LevelDebug
	}
	return h.Handler.Handle(ctx, r)
}

func (h closedWriteHandler) closedWrite(r slog.Record) bool {
	select {
	case <-h.dead:
	default:
		return false
	}
	found := false
	r.Attrs(func(a slog.Attr) bool {
		if err, ok := a.Value.Any().(error); ok && errors.Is(err, os.ErrClosed) {
			found = true
		}
		return !found
	})
	return found
}

// WithAttrs keeps the demotion on the derived handler.
func (h closedWriteHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return closedWriteHandler{Handler: h.Handler.WithAttrs(attrs), dead: h.dead}
}

// WithGroup keeps the demotion on the derived handler.
func (h closedWriteHandler) WithGroup(name string) slog.Handler {
	return closedWriteHandler{Handler: h.Handler.WithGroup(name), dead: h.dead}
}
