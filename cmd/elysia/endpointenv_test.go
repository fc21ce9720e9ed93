package main

import (
	"strings"
	"testing"
	"time"
)

func TestEndpointOptionsFromEnv(t *testing.T) {
	env := func(kv map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := kv[k]; return v, ok }
	}
	o, err := endpointOptions(env(map[string]string{
		"ELYSIA_MCP_ENDPOINT_LIST_TIMEOUT": "2s", "ELYSIA_MCP_ENDPOINT_SESSION_IDLE": " 1h ", "ELYSIA_MCP_ENDPOINT_DEBOUNCE": "50ms",
		"ELYSIA_MCP_ENDPOINT_MAX_SESSIONS": "500", "ELYSIA_MCP_ENDPOINT_MAX_BODY_BYTES": "65536", "ELYSIA_MCP_ENDPOINT_RESUME_WAIT": "3s",
		"ELYSIA_MCP_ENDPOINT_INPUT_WAIT": "45s", "ELYSIA_MCP_ENDPOINT_LIST_TTL": "5s",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if o.ListTimeout != 2*time.Second || o.SessionIdleTTL != time.Hour || o.Debounce != 50*time.Millisecond ||
		o.MaxSessions != 500 || o.MaxBodyBytes != 65536 || o.ResumeWait != 3*time.Second ||
		o.InputWait != 45*time.Second || o.ListTTL != 5*time.Second {
		t.Errorf("options = %+v", o)
	}
	if o, err := endpointOptions(env(map[string]string{"ELYSIA_MCP_ENDPOINT_DEBOUNCE": " "})); err != nil ||
		o.ListTimeout != 0 || o.SessionIdleTTL != 0 || o.Debounce != 0 || o.MaxSessions != 0 || o.MaxBodyBytes != 0 {
		t.Errorf("unset: %+v, %v; want the zeros (the endpoint's defaults)", o, err)
	}
	for k, v := range map[string]string{
		"ELYSIA_MCP_ENDPOINT_LIST_TIMEOUT": "soon", "ELYSIA_MCP_ENDPOINT_SESSION_IDLE": "1s", "ELYSIA_MCP_ENDPOINT_DEBOUNCE": "1h",
		"ELYSIA_MCP_ENDPOINT_MAX_SESSIONS": "0", "ELYSIA_MCP_ENDPOINT_MAX_BODY_BYTES": "1MiB", "ELYSIA_MCP_ENDPOINT_RESUME_WAIT": "100ms",
		"ELYSIA_MCP_ENDPOINT_INPUT_WAIT": "1s", "ELYSIA_MCP_ENDPOINT_LIST_TTL": "2h",
	} {
		if _, err := endpointOptions(env(map[string]string{k: v})); err == nil || !strings.Contains(err.Error(), k) ||
			!strings.Contains(err.Error(), "unset:") {
			t.Errorf("%s=%s: %v, want an error naming the variable and its default", k, v, err)
		}
	}
}

// TestEndpointBadSettingFailsStartUp starts serve and mcp serve with a bad
// endpoint setting: each exits 2 naming the variable, before serving.
func TestEndpointBadSettingFailsStartUp(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir+"/mcp.json", `{"servers": {}}`)
	for _, args := range [][]string{{"serve", "--addr", "127.0.0.1:0", "--db", "-"}, {"mcp", "serve", "--db", "-"}} {
		code, _, errOut := runCLI(t, dir, []string{"ELYSIA_MCP_ENDPOINT_MAX_BODY_BYTES=lots"}, args...)
		if code != exitUsage || !strings.Contains(errOut, `ELYSIA_MCP_ENDPOINT_MAX_BODY_BYTES="lots": want a whole number`) {
			t.Errorf("elysia %v with a bad setting: exit %d\n%s", args, code, errOut)
		}
	}
	code, out, _ := runCLI(t, dir, nil, "serve", "--help")
	if code != 0 || !strings.Contains(out, "ELYSIA_MCP_ENDPOINT_SESSION_IDLE") {
		t.Errorf("serve --help: exit %d, does not list the endpoint's settings:\n%s", code, out)
	}
}
