package tree

import (
	"context"
	"log/slog"
)

// Log keys this package repeats (STYLE.md §9).
const (
	logKeyUser         = "user"
	logKeyConversation = "conversation"
	logKeyNode         = "node"
	logKeyOp           = "op"
	logKeyReason       = "reason"
	logKeyErr          = "err"
)

// lazyAttrs is a handler with attributes, as Logger.With makes it, that
// hands them to its handler only for a record it handles: a run's logger
// names the user, conversation and query, and a JSON or text handler
// encodes such attributes when given them, for every query, although a
// run logs only when something goes wrong (or at debug level).
type lazyAttrs struct {
	h     slog.Handler
	attrs []slog.Attr
}

func (l lazyAttrs) Enabled(ctx context.Context, level slog.Level) bool {
	return l.h.Enabled(ctx, level)
}

func (l lazyAttrs) Handle(ctx context.Context, r slog.Record) error {
	return l.h.WithAttrs(l.attrs).Handle(ctx, r)
}

func (l lazyAttrs) WithAttrs(attrs []slog.Attr) slog.Handler {
	return l.h.WithAttrs(l.attrs).WithAttrs(attrs)
}

func (l lazyAttrs) WithGroup(name string) slog.Handler {
	return l.h.WithAttrs(l.attrs).WithGroup(name)
}
