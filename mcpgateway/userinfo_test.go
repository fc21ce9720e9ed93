package mcpgateway

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// TestURLUserinfoMaskedInStatus connects to a closed port with a password
// in the URL: neither the error nor the status (what /api/servers shows)
// carries the password.
func TestURLUserinfoMaskedInStatus(t *testing.T) {
	cfg := parseOK(t, `{"servers": {"a": {"type": "http", "url": "http://user:pa55word@127.0.0.1:1/mcp", "connect_timeout": 2}}}`, nil).Servers[0]
	var logs bytes.Buffer
	var mu sync.Mutex
	g := New(cfg, &Options{Logger: slog.New(slog.NewTextHandler(&lockedWriter{mu: &mu, w: &logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	defer func() { _ = g.Close() }()
	_, err := g.List(t.Context())
	if err == nil {
		t.Fatal("List against a closed port succeeded")
	}
	st := g.Status()
	mu.Lock()
	logged := logs.String()
	mu.Unlock()
	for what, text := range map[string]string{"the error": err.Error(), "LastError": st.LastError, "the log": logged} {
		if strings.Contains(text, "pa55word") {
			t.Errorf("%s shows the password: %s", what, text)
		}
	}
}

// lockedWriter serialises writes of a logger used by several goroutines.
type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
