package session

import (
	"context"
	"log/slog"
)

// LogConnectFailed is the message of the warning a failed connect logs
// (with its error): a one-shot command that reports the same error itself
// may leave it out.
const LogConnectFailed = "gateway connect failed"

// noListenText is what mcp-go (v1.2.1) logs, at error, when a Streamable
// HTTP server answers the GET stream with 405: the specification lets a
// server offer no stream, so it is no error of the server's
// (TestNoListenLoggedAtDebug pins the text).
const noListenText = "server does not support listening"

// noListenHandler demotes mcp-go's record of a server without a GET
// stream to debug.
type noListenHandler struct{ slog.Handler }

func (h noListenHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level > slog.LevelDebug && r.Message == noListenText {
		if !h.Enabled(ctx, slog.LevelDebug) {
			return nil
		}
		r = r.Clone()
		r.Level = slog.LevelDebug
	}
	return h.Handler.Handle(ctx, r)
}

func (h noListenHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return noListenHandler{h.Handler.WithAttrs(attrs)}
}

func (h noListenHandler) WithGroup(name string) slog.Handler {
	return noListenHandler{h.Handler.WithGroup(name)}
}
