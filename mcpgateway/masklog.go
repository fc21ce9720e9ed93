package mcpgateway

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/elysia-go/elysia/tools"
)

// maskHandler is a slog.Handler that replaces a server's secrets in every
// record before passing it on: the message, string values, errors and
// anything else formatted as text, inside groups too. Each gateway logs
// through one, and so does mcp-go's transport it hands the logger to, so an
// error that quotes a URL with a token or a header value cannot leak it.
type maskHandler struct {
	next slog.Handler
	mask func(string) string
}

// newMaskLogger returns a logger writing to l's handler through mask.
func newMaskLogger(l *slog.Logger, mask func(string) string) *slog.Logger {
	return slog.New(&maskHandler{next: l.Handler(), mask: mask})
}

func (h *maskHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

func (h *maskHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, h.mask(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h *maskHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	masked := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		masked[i] = h.attr(a)
	}
	return &maskHandler{next: h.next.WithAttrs(masked), mask: h.mask}
}

func (h *maskHandler) WithGroup(name string) slog.Handler {
	return &maskHandler{next: h.next.WithGroup(name), mask: h.mask}
}

// attr masks one attribute. LogValuers are resolved first (ServerConfig's
// is already masked, but masking twice is harmless); numbers, booleans,
// times and durations cannot carry a secret and pass unchanged.
func (h *maskHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.mask(v.String()))
	case slog.KindGroup:
		group := v.Group()
		masked := make([]slog.Attr, len(group))
		for i, g := range group {
			masked[i] = h.attr(g)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(masked...)}
	case slog.KindAny:
		if v.Any() == nil {
			return slog.Attr{Key: a.Key, Value: v}
		}
		return slog.Attr{Key: a.Key, Value: h.anyValue(v.Any())}
	default:
		return slog.Attr{Key: a.Key, Value: v}
	}
}

// anyValue masks a value slog would format itself: errors and Stringers as
// their masked text, string slices element by element, anything else
// through its JSON form so that a JSON log still shows structure.
func (h *maskHandler) anyValue(v any) slog.Value {
	switch x := v.(type) {
	case error:
		return slog.StringValue(h.mask(x.Error()))
	case fmt.Stringer:
		return slog.StringValue(h.mask(x.String()))
	case []string:
		out := make([]string, len(x))
		for i, s := range x {
			out[i] = h.mask(s)
		}
		return slog.AnyValue(out)
	}
	// tools.Marshal does not escape '&', '<' or '>', so a secret holding
	// them still reads as itself in the JSON and is masked.
	b, err := tools.Marshal(v)
	if err != nil {
		return slog.StringValue(h.mask(fmt.Sprint(v)))
	}
	masked := h.mask(string(b))
	if !json.Valid([]byte(masked)) { // a secret that spanned JSON syntax
		return slog.StringValue(masked)
	}
	return slog.AnyValue(json.RawMessage(masked))
}
