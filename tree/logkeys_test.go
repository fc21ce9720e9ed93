package tree

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"testing"
	"testing/slogtest"
)

// TestLazyAttrs: a logger on lazyAttrs writes what one made with With
// writes, groups included; and it is a handler as slog wants one
// (slogtest).
func TestLazyAttrs(t *testing.T) {
	attrs := []slog.Attr{slog.String(logKeyUser, "u1"), slog.String(logKeyConversation, "c1"), slog.String("query_id", "q1")}
	var lazy, with bytes.Buffer
	log := func(l *slog.Logger) {
		l.Debug("not written")
		l.Warn("one", "a", 1)
		l.With("b", 2).WithGroup("g").Warn("two", "c", 3)
	}
	log(slog.New(lazyAttrs{slog.NewJSONHandler(&lazy, &slog.HandlerOptions{Level: slog.LevelInfo}), attrs}))
	args := make([]any, len(attrs))
	for i, a := range attrs {
		args[i] = a
	}
	log(slog.New(slog.NewJSONHandler(&with, &slog.HandlerOptions{Level: slog.LevelInfo})).With(args...))
	strip := func(b []byte) []map[string]any {
		var out []map[string]any
		for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
			var m map[string]any
			if err := json.Unmarshal(line, &m); err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			delete(m, slog.TimeKey)
			out = append(out, m)
		}
		return out
	}
	got, want := strip(lazy.Bytes()), strip(with.Bytes())
	gotJSON, _ := json.Marshal(got)
	wantJSON, _ := json.Marshal(want)
	if len(got) != 2 || string(gotJSON) != string(wantJSON) {
		t.Errorf("with lazyAttrs:\n%s\nwith Logger.With:\n%s", gotJSON, wantJSON)
	}

	var buf bytes.Buffer
	slogtest.Run(t, func(*testing.T) slog.Handler {
		buf.Reset()
		return lazyAttrs{h: slog.NewJSONHandler(&buf, nil)}
	}, func(*testing.T) map[string]any {
		var m map[string]any
		if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		return m
	})
}
