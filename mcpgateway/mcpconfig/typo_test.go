package mcpconfig

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// TestMisspeltKeyNamed: a misspelt key gets a suggestion, and when the
// server then lacks what the key would have given it, the error says so
// beside the missing field ("comand" → missing command).
func TestMisspeltKeyNamed(t *testing.T) {
	_, err := Parse("mcp.json", []byte(`{"servers": {"todo": {"type": "stdio", "comand": "./todo-mcp"}}}`), nil)
	if err == nil || !strings.Contains(err.Error(), "missing command") ||
		!strings.Contains(err.Error(), `mcp.json:1:40: server "todo": unknown key "comand" ignored: did you mean "command"?`) {
		t.Errorf("error = %v, want the missing command and the misspelt key with its place", err)
	}
	cfg := parseOK(t, `{"servers": {"todo": {"command": "x", "evn": {}, "autoApprove": []}}}`, nil)
	if got := strings.Join(cfg.Warnings, "\n"); !strings.Contains(got, `unknown key "evn" ignored: did you mean "env"?`) ||
		!strings.Contains(got, `unknown key "autoApprove" ignored`) || strings.Contains(got, `"autoApprove" ignored: did you mean`) {
		t.Errorf("warnings = %s", got)
	}
	for _, tt := range []struct{ key, want string }{
		{"comand", "command"}, {"arg", "args"}, {"headres", "headers"}, {"call_timout", "call_timeout"},
		{"url", ""}, {"foo", ""}, {"en", "env"}, {"typ", "type"}, {"pinn", "pin"},
	} {
		if got := closestKey(tt.key, serverKeys); got != tt.want {
			t.Errorf("closestKey(%q) = %q, want %q", tt.key, got, tt.want)
		}
	}
}

// TestServerKeysAreKnown: every key the suggestion may name is one the
// parser reads: none of them is warned about as unknown.
func TestServerKeysAreKnown(t *testing.T) {
	for _, k := range serverKeys {
		var logs bytes.Buffer
		src := fmt.Sprintf(`{"servers": [{"name": "a", "command": "x", %q: null}]}`, k)
		_, _ = Parse("mcp.json", []byte(src), &LoadOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		if strings.Contains(logs.String(), "unknown key") {
			t.Errorf("key %q is in serverKeys but the parser calls it unknown: %s", k, logs.String())
		}
	}
}

// TestOtherClientsURLKeys: Windsurf's serverUrl and Gemini CLI's httpUrl
// load like url; two of them in one server are an error.
func TestOtherClientsURLKeys(t *testing.T) {
	cfg := parseOK(t, `{"mcpServers": {"w": {"serverUrl": "https://example.com/mcp"}, "g": {"httpUrl": "https://example.com/g"}}}`, nil)
	if len(cfg.Servers) != 2 {
		t.Fatalf("servers: %+v", cfg.Servers)
	}
	for i, want := range []string{"https://example.com/mcp", "https://example.com/g"} {
		if s := cfg.Servers[i]; s.URL != want || s.Transport != TransportHTTP {
			t.Errorf("server %s: url %q transport %q, want %q over http", s.Name, s.URL, s.Transport, want)
		}
	}
	if len(cfg.Warnings) != 0 {
		t.Errorf("warnings: %q", cfg.Warnings)
	}
	_, err := Parse("mcp.json", []byte(`{"mcpServers": {"w": {"url": "https://a/mcp", "serverUrl": "https://b/mcp"}}}`), nil)
	if err == nil || !strings.Contains(err.Error(), "give one of url, serverUrl and httpUrl") {
		t.Errorf("two URL keys: %v, want an error", err)
	}
	_, err = Parse("mcp.json", []byte(`{"mcpServers": {"w": {"serverUrl": "https://b/mcp", "url": "https://a/mcp"}}}`), nil)
	if err == nil || !strings.Contains(err.Error(), "give one of url, serverUrl and httpUrl") {
		t.Errorf("two URL keys: %v, want an error", err)
	}
}
