package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// logServer is an MCP server on 127.0.0.1 whose tool say logs its text
// (notifications/message) during the call, and answers once kept(text)
// says the message arrived: a message that came after its call's answer
// belongs to no call, and the test is about those that belong to one.
func logServer(t *testing.T, kept func(text string) bool) *httptest.Server {
	t.Helper()
	srv := mcpserver.NewMCPServer("logs", "1.0.0")
	srv.AddTool(mcp.NewTool("say", mcp.WithString("text")), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		text := req.GetString("text", "")
		if err := srv.SendNotificationToClient(ctx, "notifications/message", map[string]any{"level": "info", "data": text}); err != nil {
			return nil, err
		}
		deadline := time.Now().Add(10 * time.Second)
		for !kept(text) {
			if time.Now().After(deadline) || ctx.Err() != nil {
				return nil, fmt.Errorf("the message %q never reached the gateway", text)
			}
			time.Sleep(10 * time.Millisecond)
		}
		return mcp.NewToolResultText("said " + text), nil
	})
	ts := httptest.NewServer(mcpserver.NewStreamableHTTPServer(srv))
	t.Cleanup(ts.Close)
	return ts
}

// TestServerLogsPerUser: GET /api/servers/:name/logs shows a user's key
// only that user's messages (of their calls on a shared session, and of
// their own session of a per-user server), and an admin's key all.
func TestServerLogsPerUser(t *testing.T) {
	t.Parallel()
	var service atomic.Pointer[serviceProc]
	// kept runs on the MCP server's goroutines: it reads the logs as the
	// admin without failing the test itself.
	kept := func(text string) bool {
		for _, server := range []string{"shared", "mine"} {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, service.Load().URL+"/api/servers/"+server+"/logs", nil)
			if err != nil {
				return false
			}
			req.Header.Set("Authorization", "Bearer kz")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return false
			}
			b, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if strings.Contains(string(b), text) {
				return true
			}
		}
		return false
	}
	url := logServer(t, kept).URL + "/mcp"
	s := startService(t, serveOptions{Env: []string{"ELYSIA_API_KEYS=ka:alice,kb:bob,kz:*"},
		Config: fmt.Sprintf(`{"servers": {"shared": {"type": "http", "url": %q},
			"mine": {"type": "http", "url": %q, "headers": {"X-Key": "${user:KEY}"}}}}`, url, url)})
	service.Store(s)
	for key, user := range map[string]string{"ka": "alice", "kb": "bob"} {
		if code, body := do(t, http.MethodPut, s.URL+"/users/"+user+"/secrets/KEY", key, map[string]any{"value": user + "-key-0001"}); code != http.StatusNoContent {
			t.Fatalf("PUT %s's secret: %d %v", user, code, body)
		}
	}
	say := func(key, server, text string) {
		t.Helper()
		code, body := do(t, http.MethodPost, s.URL+"/api/servers/"+server+"/execute", key, map[string]any{"tool_name": "say", "tool_inputs": map[string]any{"text": text}})
		if code != http.StatusOK || !strings.Contains(fmt.Sprint(body["result"]), "said "+text) {
			t.Fatalf("%s says %s on %s: %d %v", key, text, server, code, body)
		}
	}
	say("ka", "shared", "alice-on-shared")
	say("kb", "shared", "bob-on-shared")
	say("ka", "mine", "alice-on-mine")
	say("kb", "mine", "bob-on-mine")
	logs := func(key, server string) string {
		t.Helper()
		code, body := do(t, http.MethodGet, s.URL+"/api/servers/"+server+"/logs", key, nil)
		if code != http.StatusOK {
			t.Fatalf("%s reads the logs of %s: %d %v", key, server, code, body)
		}
		return fmt.Sprint(body["logs"])
	}
	for _, tc := range []struct {
		key, server string
		want, not   []string
	}{
		{"kz", "shared", []string{"alice-on-shared", "bob-on-shared"}, nil},
		{"kz", "mine", []string{"alice-on-mine", "bob-on-mine"}, nil},
		{"ka", "shared", []string{"alice-on-shared"}, []string{"bob-on-shared"}},
		{"kb", "shared", []string{"bob-on-shared"}, []string{"alice-on-shared"}},
		{"ka", "mine", []string{"alice-on-mine"}, []string{"bob-on-mine"}},
		{"kb", "mine", []string{"bob-on-mine"}, []string{"alice-on-mine"}},
	} {
		got := logs(tc.key, tc.server)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s does not see %s in the logs of %s: %s", tc.key, w, tc.server, got)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(got, n) {
				t.Errorf("%s sees %s in the logs of %s: %s", tc.key, n, tc.server, got)
			}
		}
	}
}
