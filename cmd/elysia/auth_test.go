package main

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/elysia-go/elysia/internal/testenv"
)

// Keys long enough that finding one in the log means it was logged.
const (
	aliceKey = "k1-alice-3f9a61c2d8e04b7a"
	bobKey   = "k2-bob-81d07e5c92a34f60"
	adminKey = "k3-admin-c4e29b8a17f6d053"
)

// TestAPIKeys runs the service with ELYSIA_API_KEYS and checks who may use
// which route, over HTTP and the WebSocket.
func TestAPIKeys(t *testing.T) {
	t.Parallel()
	llm := newFakeLLM(t, answer("Hi Alice."))
	keys := fmt.Sprintf("ELYSIA_API_KEYS=%s:alice,%s:bob,%s:*", aliceKey, bobKey, adminKey)
	s := startService(t, serveOptions{Env: append(llm.Env(), keys)})
	u := s.URL

	for _, c := range []struct {
		name, method, path, key string
		want                    int
	}{
		{"tree without a key", http.MethodGet, "/tree/alice/c1", "", http.StatusUnauthorized},
		{"tree with a wrong key", http.MethodGet, "/tree/alice/c1", "nope", http.StatusUnauthorized},
		{"tree with bob's key", http.MethodGet, "/tree/alice/c1", bobKey, http.StatusForbidden},
		{"tree with alice's key", http.MethodGet, "/tree/alice/c1", aliceKey, http.StatusOK},
		{"tree with the admin key", http.MethodGet, "/tree/alice/c1", adminKey, http.StatusOK},
		{"init user as bob for alice", http.MethodPost, "/init/user/alice", bobKey, http.StatusForbidden},
		{"conversations as bob for alice", http.MethodGet, "/conversations/alice", bobKey, http.StatusForbidden},
		{"conversations as alice", http.MethodGet, "/conversations/alice", aliceKey, http.StatusOK},
		{"tools without a key", http.MethodGet, "/tools/available", "", http.StatusUnauthorized},
		{"tools with bob's key", http.MethodGet, "/tools/available", bobKey, http.StatusOK},
		{"servers without a key", http.MethodGet, "/api/servers", "", http.StatusUnauthorized},
		{"servers with bob's key", http.MethodGet, "/api/servers", bobKey, http.StatusOK},
		{"list with bob's key", http.MethodPost, "/api/servers/todo/list", bobKey, http.StatusOK},
		{"healthz without a key", http.MethodGet, "/healthz", "", http.StatusOK},
		{"readyz without a key", http.MethodGet, "/readyz", "", http.StatusOK},
		{"metrics without a key", http.MethodGet, "/metrics", "", http.StatusUnauthorized},
		{"metrics with alice's key", http.MethodGet, "/metrics", aliceKey, http.StatusForbidden},
	} {
		code, body := do(t, c.method, u+c.path, c.key, nil)
		wantStatus(t, c.name, code, body, c.want)
	}
	code, _, raw := rawDo(t, http.MethodGet, u+"/metrics", adminKey, nil, nil)
	if code != http.StatusOK || !strings.Contains(string(raw), "# TYPE") {
		t.Errorf("metrics with the admin key: %d %.100s", code, raw)
	}

	// The page shell and its assets load without a key.
	code, hdr, _ := rawDo(t, http.MethodGet, u+"/tree/alice/c1", "", nil, map[string]string{"Accept": "text/html"})
	if code != http.StatusOK || !strings.HasPrefix(hdr.Get("Content-Type"), "text/html") {
		t.Errorf("page shell without a key: %d %q", code, hdr.Get("Content-Type"))
	}
	if code, _, _ := rawDo(t, http.MethodGet, u+"/ui/app.js", "", nil, nil); code != http.StatusOK {
		t.Errorf("/ui/app.js without a key: %d", code)
	}

	// SSE: bob may not query alice's conversation.
	if res := querySSE(t, t.Context(), u, bobKey, "alice", "c1", "hi"); res.Status != http.StatusForbidden {
		t.Errorf("SSE query as bob for alice: %d %v", res.Status, types(res.Events))
	}

	// WebSocket: no key is refused; alice's key works for alice only.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if c, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(u, "http")+"/ws/query", nil); err == nil {
		_ = c.CloseNow() // the test already failed; this only frees the connection
		t.Errorf("WebSocket without a key was accepted")
	} else if resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("WebSocket without a key: %v %v", err, resp)
	}
	conn := dialWS(t, u, aliceKey)
	if got := conn.Subprotocol(); got != "bearer."+aliceKey {
		t.Errorf("WebSocket subprotocol = %q, want the bearer one echoed", got)
	}
	sendWS(t, conn, map[string]string{"user_id": "bob", "conversation_id": "c1", "query_id": "q-bob", "query": "hi"})
	evs := readWS(t, conn, "q-bob", 15*time.Second)
	if got := types(evs); len(got) != 1 || got[0] != "error" {
		t.Errorf("WebSocket message for bob with alice's key: %v", got)
	} else if txt, _ := evs[0].payload(t)["text"].(string); !strings.Contains(txt, "bob") {
		t.Errorf("error text = %q", txt)
	}
	sendWS(t, conn, map[string]string{"user_id": "alice", "conversation_id": "c1", "query_id": "q-alice", "query": "hi"})
	evs = readWS(t, conn, "q-alice", 30*time.Second)
	if got := lastText(t, evs); got != "Hi Alice." {
		t.Errorf("WebSocket answer for alice = %q", got)
	}

	out := s.Output()
	for _, k := range []string{aliceKey, bobKey, adminKey} {
		if strings.Contains(out, k) {
			t.Errorf("key %s… appears in the service's log", k[:6])
		}
	}
}

// TestBindRefusesWithoutKeys starts `serve` on all interfaces without keys:
// it exits 2 saying how to fix it, and starts with --allow-unauthenticated.
func TestBindRefusesWithoutKeys(t *testing.T) {
	t.Parallel()
	bin := elysiaBin(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "mcp.json")
	writeFile(t, cfg, defaultConfig(t))
	port := testenv.FreePort(t)

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "serve", "--addr", fmt.Sprintf("0.0.0.0:%d", port), "--config", cfg)
	cmd.Dir = dir
	cmd.Env = cleanEnv()
	out, err := cmd.CombinedOutput()
	if code := exitCode(err); code != exitUsage {
		t.Fatalf("serve on 0.0.0.0 without keys: exit %d, want 2\n%s", code, out)
	}
	for _, hint := range []string{"ELYSIA_API_KEYS", "127.0.0.1", "--allow-unauthenticated"} {
		if !strings.Contains(string(out), hint) {
			t.Errorf("refusal does not mention %s:\n%s", hint, out)
		}
	}

	cmd = exec.Command(bin, "serve", "--addr", fmt.Sprintf("0.0.0.0:%d", port), "--config", cfg, "--allow-unauthenticated")
	cmd.Dir = dir
	cmd.Env = cleanEnv()
	testenv.Start(t, cmd)
	testenv.WaitFor(t, 20*time.Second, "serve --allow-unauthenticated to answer", func() bool {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", port))
		if err != nil {
			return false
		}
		_ = resp.Body.Close() // only the status matters
		return resp.StatusCode == http.StatusOK
	})
}
