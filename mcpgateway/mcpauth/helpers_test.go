package mcpauth

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// newLoopbackAS starts an authorization server and a protected resource on
// 127.0.0.1: rs serves its protected-resource metadata for /mcp naming as,
// as serves its metadata, and an HTML page (not metadata) at /html.
func newLoopbackAS(t *testing.T) (as, rs *httptest.Server) {
	t.Helper()
	as = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			writeJSON(w, map[string]any{"issuer": as.URL, "authorization_endpoint": as.URL + "/authorize",
				"token_endpoint": as.URL + "/token", "code_challenge_methods_supported": []string{"S256"}})
		case "/html":
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte("<html>not metadata</html>"))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(as.Close)
	rs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/.well-known/oauth-protected-resource/mcp" {
			http.NotFound(w, r)
			return
		}
		writeJSON(w, map[string]any{"resource": rs.URL + "/mcp", "authorization_servers": []string{as.URL}})
	}))
	t.Cleanup(rs.Close)
	return as, rs
}

// originRecorder is a server on 127.0.0.1 that records every request it
// gets and answers {}.
type originRecorder struct {
	*httptest.Server
	mu  sync.Mutex
	got []string
}

func newOriginRecorder(t *testing.T) *originRecorder {
	t.Helper()
	rec := &originRecorder{}
	rec.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<16))
		rec.mu.Lock()
		rec.got = append(rec.got, fmt.Sprintf("%s %s\n%v\n%s", r.Method, r.URL, r.Header, body))
		rec.mu.Unlock()
		writeJSON(w, map[string]any{})
	}))
	t.Cleanup(rec.Close)
	return rec
}

func (rec *originRecorder) requests() []string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]string(nil), rec.got...)
}
