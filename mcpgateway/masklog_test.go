package mcpgateway

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/elysia-go/elysia/internal/testenv"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

func TestMaskHandler(t *testing.T) {
	t.Parallel()
	mask := mcpconfig.ServerConfig{Secrets: []string{"SECRET-a", "SECRET-b", "SECRET-<&>"}}.Masker()
	var buf bytes.Buffer
	logger := newMaskLogger(slog.New(slog.NewJSONHandler(&buf, nil)), mask).
		With("with", "SECRET-a").WithGroup("g")
	logger.Info("msg SECRET-a",
		"s", "x SECRET-b y",
		"err", errors.New("dial ?key=SECRET-b"),
		"list", []string{"SECRET-a", "ok"},
		"m", map[string]string{"k": "SECRET-b", "html": "SECRET-<&>"},
		slog.Group("inner", "v", "SECRET-a"),
		"n", 42)
	out := buf.String()
	if strings.Contains(out, "SECRET") {
		t.Errorf("a secret reached the log:\n%s", out)
	}
	for _, want := range []string{`"msg":"msg ***"`, `"with":"***"`, `"s":"x *** y"`, `"err":"dial ?key=***"`,
		`"list":["***","ok"]`, `"m":{"html":"***","k":"***"}`, `"inner":{"v":"***"}`, `"n":42`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s:\n%s", want, out)
		}
	}
}

// TestGatewayLoggerMasks checks the wiring: the logger a gateway hands to
// mcp-go's transports masks what they log, such as a net/http error that
// quotes the configured URL with its key.
func TestGatewayLoggerMasks(t *testing.T) {
	t.Parallel()
	cfg := parseOK(t, `{"servers": {"r": {"type": "sse", "url": "http://127.0.0.1:9/sse?key=${env:KEY}"}}}`,
		map[string]string{"KEY": "SECRET-key"}).Servers[0]
	var buf bytes.Buffer
	g := New(cfg, &Options{Logger: slog.New(slog.NewJSONHandler(&buf, nil))})
	t.Cleanup(func() { _ = g.Close() })
	g.logger.Error("SSE stream error", "err", fmt.Errorf("Get %q: connection refused", cfg.URL))
	if out := buf.String(); strings.Contains(out, "SECRET") || !strings.Contains(out, `key=***`) {
		t.Errorf("gateway logger output:\n%s", out)
	}
}

// TestGatewayKeepsSecretsOutOfLogs runs the two ways a secret usually
// escapes: a server that echoes the request (URL key and Authorization
// header) in its error, and a stdio child that prints its secret env to
// stderr before dying. Neither the error nor any log line, mcp-go's
// transport logs included, may show it.
func TestGatewayKeepsSecretsOutOfLogs(t *testing.T) {
	t.Parallel()
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = fmt.Fprintf(w, "denied %s with %s", r.URL, r.Header.Get("Authorization"))
	}))
	t.Cleanup(echo.Close)
	src := `{"inputs": [{"type": "promptString", "id": "pw", "password": true}],
	"servers": {
		"remote": {"type": "http", "url": "` + echo.URL + `/mcp?key=${env:KEY}",
			"headers": {"Authorization": "Bearer ${input:pw}"}},
		"child": {"command": "sh", "args": ["-c", "echo \"token is $PW\" >&2; exit 3"],
			"env": {"PW": "${input:pw}"}}}}`
	cfg := parseOK(t, src, map[string]string{"ELYSIA_INPUT_PW": "SECRET-password", "KEY": "SECRET-key"})
	logs := &logBuffer{}
	opts := &Options{Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		CloseGrace: time.Second}
	for _, sc := range cfg.Servers {
		t.Run(sc.Name, func(t *testing.T) {
			g := New(sc, opts)
			t.Cleanup(func() { _ = g.Close() })
			_, err := g.Execute(t.Context(), "anything", nil)
			if err == nil {
				t.Fatal("Execute succeeded against a failing server")
			}
			if strings.Contains(err.Error(), "SECRET") || !strings.Contains(err.Error(), sc.Name) {
				t.Errorf("error shows a secret or lacks the server name: %v", err)
			}
			if st := g.Status(); strings.Contains(st.LastError, "SECRET") {
				t.Errorf("status shows a secret: %s", st.LastError)
			}
		})
	}
	if out := logs.String(); strings.Contains(out, "SECRET") || !strings.Contains(out, "***") {
		t.Errorf("logs show a secret or mask nothing:\n%s", out)
	}
}

// TestSessionEndLogMasked kills a connected todo server whose database path
// is a secret it logs at start-up: the session's death carries that stderr
// line, and the "gateway session ended" record must show it masked.
func TestSessionEndLogMasked(t *testing.T) {
	t.Parallel()
	secretDB := filepath.Join(t.TempDir(), "SECRET-db.sqlite")
	src := `{"inputs": [{"type": "promptString", "id": "db", "password": true}],
	"servers": {"todo": {"command": "` + testenv.TodoMCP(t) + `", "env": {"TODO_DB": "${input:db}"}}}}`
	cfg := parseOK(t, src, map[string]string{"ELYSIA_INPUT_DB": secretDB})
	logs := &logBuffer{}
	g := New(cfg.Servers[0], &Options{Logger: slog.New(slog.NewJSONHandler(logs, nil)), CloseGrace: time.Second})
	t.Cleanup(func() { _ = g.Close() })
	if _, err := g.List(t.Context()); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 5*time.Second, "the start-up log line on stderr", func() bool {
		return strings.Contains(strings.Join(g.stderrTail(), "\n"), "database ready")
	})
	if err := syscall.Kill(g.Status().PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 5*time.Second, "the session-ended log line", func() bool {
		return strings.Contains(logs.String(), "gateway session ended")
	})
	out := logs.String()
	if strings.Contains(out, "SECRET") {
		t.Errorf("a secret reached the log:\n%s", out)
	}
	if !strings.Contains(out, `db=\"sqlite ***\"`) {
		t.Errorf("the session-ended record lacks the masked stderr line:\n%s", out)
	}
}

// stderrTail returns the kept stderr lines of the current stdio child.
func (g *Gateway) stderrTail() []string {
	s := currentSession(g)
	if s == nil {
		return nil
	}
	return s.Stderr()
}
