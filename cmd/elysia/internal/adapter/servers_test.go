package adapter

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/elysia-go/elysia/discovery"
	"github.com/elysia-go/elysia/internal/testenv"
	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/tree"
	"github.com/elysia-go/elysia/web"
)

// newDiscovery loads mcpJSON into a Discovery over a fresh tree.Manager;
// gopts may be nil. Nothing connects until called.
func newDiscovery(t *testing.T, mcpJSON string, gopts *mcpgateway.Options) *discovery.Discovery {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(cfg, []byte(mcpJSON), 0o600); err != nil {
		t.Fatal(err)
	}
	d := discovery.New(cfg, tree.NewManager(nil), &discovery.Options{Gateway: gopts})
	t.Cleanup(func() { _ = d.Close() })
	if err := d.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestServersStatus checks that every configured server is listed in file
// order with its configuration as written, secrets masked.
func TestServersStatus(t *testing.T) {
	d := newDiscovery(t, `{"servers": {
		"local": {"command": "/bin/true", "args": ["-x"], "env": {"API_TOKEN": "s3cret-value"}, "description": "Local things"},
		"off": {"url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer s3cret-header"}, "disabled": true}
	}}`, nil)
	st, err := NewServers(d, nil).Servers(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if st.ConfigFile != d.Path() || st.ConfigError != "" || len(st.Servers) != 2 {
		t.Fatalf("Servers = %+v, want two servers of %s", st, d.Path())
	}
	local, off := st.Servers[0], st.Servers[1]
	if local.Name != "local" || local.ToolName != "mcp_local" || local.Transport != "stdio" || !local.Enabled ||
		local.Command != "/bin/true" || len(local.Args) != 1 || local.Description != "Local things" {
		t.Errorf("local = %+v", local)
	}
	if off.Name != "off" || off.Enabled || off.State != string(mcpgateway.StateDisabled) || off.URL == "" {
		t.Errorf("off = %+v, want a disabled http server", off)
	}
	all := strings.Join([]string{local.Env["API_TOKEN"], off.Headers["Authorization"]}, " ")
	if strings.Contains(all, "s3cret") || local.Env["API_TOKEN"] == "" {
		t.Errorf("secrets shown: env %q, headers %q", local.Env, off.Headers)
	}
}

// TestServersErrors checks the errors web maps to statuses: an unknown
// server is tree.ErrNotFound (404) for every route, a disabled one
// web.ErrUnavailable (503) naming the server.
func TestServersErrors(t *testing.T) {
	d := newDiscovery(t, `{"servers": {"off": {"command": "/bin/true", "disabled": true}}}`, nil)
	a := NewServers(d, nil)
	ctx := t.Context()
	calls := map[string]func(name string) error{
		"list":    func(n string) error { _, err := a.List(ctx, n, web.ListRequest{}); return err },
		"execute": func(n string) error { _, err := a.Execute(ctx, n, "t", nil); return err },
		"resources": func(n string) error {
			_, err := a.Resources(ctx, n)
			return err
		},
		"read":    func(n string) error { _, err := a.ReadResource(ctx, n, "file:///x"); return err },
		"prompts": func(n string) error { _, err := a.Prompts(ctx, n); return err },
		"get":     func(n string) error { _, err := a.GetPrompt(ctx, n, "p", nil); return err },
	}
	for name, call := range calls {
		if err := call("nope"); !errors.Is(err, tree.ErrNotFound) || !strings.Contains(err.Error(), `"nope"`) {
			t.Errorf("%s of an unknown server: %v, want tree.ErrNotFound naming it", name, err)
		}
		err := call("mcp_off")
		if !errors.Is(err, web.ErrUnavailable) || !strings.Contains(err.Error(), `"off"`) {
			t.Errorf("%s of a disabled server: %v, want web.ErrUnavailable naming the server", name, err)
		}
	}
}

// TestServersTodo lists and calls the tools of a real server (todo-mcp):
// the page and the result are copied into web's types, a cursor no page
// gave is the client's error (422), and so is an unknown tool.
func TestServersTodo(t *testing.T) {
	cmd, _ := json.Marshal(testenv.TodoMCP(t))
	db, _ := json.Marshal(filepath.Join(t.TempDir(), "todos.db"))
	d := newDiscovery(t, `{"servers": {"todo": {"command": `+string(cmd)+`, "env": {"TODO_DB": `+string(db)+`}}}}`, nil)
	a := NewServers(d, nil)
	ctx := t.Context()
	page, err := a.List(ctx, "mcp_todo", web.ListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if page.Server != "todo" || page.Total == 0 || len(page.Tools) == 0 || page.Tools[0].Name == "" || len(page.Tools[0].Inputs) == 0 {
		t.Fatalf("List = %+v, want todo's tools with their schemas", page)
	}
	if _, err := a.List(ctx, "todo", web.ListRequest{Cursor: "never-given"}); !errors.Is(err, tools.ErrInvalidArguments) {
		t.Errorf("List with a foreign cursor: %v, want tools.ErrInvalidArguments", err)
	}
	if _, err := a.Execute(ctx, "todo", "no_such_tool", map[string]any{}); !errors.Is(err, tools.ErrUnknownTool) {
		t.Errorf("Execute of an unknown tool: %v, want tools.ErrUnknownTool", err)
	}
	res, err := a.Execute(ctx, "todo", "create_todo", map[string]any{"title": "Buy milk"})
	if err != nil || res.IsError || len(res.Content) == 0 {
		t.Errorf("Execute create_todo = %+v, %v; want a result", res, err)
	}
}

// TestServersErrorMasked checks that a server's failure reaches web named
// and with the server's secrets masked, as a 502 (not this service's 500):
// the server here prints its secret and exits.
func TestServersErrorMasked(t *testing.T) {
	d := newDiscovery(t, `{"servers": {"leaky": {"command": "/bin/sh", "args": ["-c", "echo \"token $LEAKY_TOKEN\" >&2; echo \"token $LEAKY_TOKEN\"; exit 1"],
		"env": {"LEAKY_TOKEN": "s3cret-value"}}}}`, nil)
	_, err := NewServers(d, nil).List(t.Context(), "leaky", web.ListRequest{})
	if err == nil {
		t.Fatal("List of a server that exits: no error")
	}
	t.Logf("error: %v", err)
	if strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), `"leaky"`) {
		t.Errorf("error %q: want the server named and its secret masked", err)
	}
	if errors.Is(err, tree.ErrNotFound) || errors.Is(err, tools.ErrInvalidArguments) {
		t.Errorf("error %v is classified as the client's", err)
	}
}

// gate is a RunGate that refuses once closed.
type gate struct{ closed, begun, ended int }

func (g *gate) Begin() bool {
	if g.closed > 0 {
		return false
	}
	g.begun++
	return true
}
func (g *gate) End() { g.ended++ }

// TestRunnerRefusedOnShutdown checks that a query the gate refuses fails
// with web.ErrUnavailable (503) before reaching the tree.
func TestRunnerRefusedOnShutdown(t *testing.T) {
	g := &gate{closed: 1}
	r := Runner{Trees: tree.NewManager(nil), Runs: g}
	err := r.RunQuery(context.Background(), "alice", "c1", "q1", "hi", func(tools.Envelope) {})
	if !errors.Is(err, web.ErrUnavailable) || g.ended != 0 {
		t.Errorf("RunQuery after shutdown: %v (ended %d), want web.ErrUnavailable without End", err, g.ended)
	}
}
