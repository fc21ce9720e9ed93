package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver testenv.MCPRegistry creates its database with

	"github.com/elysia-go/elysia/internal/testenv"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// servers returns GET /api/servers by server name.
func servers(t *testing.T, s *serviceProc) map[string]map[string]any {
	t.Helper()
	code, body := do(t, http.MethodGet, s.URL+"/api/servers", "", nil)
	if code != http.StatusOK {
		t.Fatalf("GET /api/servers = %d", code)
	}
	out := map[string]map[string]any{}
	list, _ := body["servers"].([]any)
	for _, v := range list {
		if m, ok := v.(map[string]any); ok {
			name, _ := m["name"].(string)
			out[name] = m
		}
	}
	return out
}

// entries returns each server entry of the file at path as written.
func entries(t *testing.T, path string, names ...string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	e, err := mcpconfig.NewEdit(path, data)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, n := range names {
		if b, err := e.Entry(n); err == nil {
			out[n] = string(b)
		}
	}
	return out
}

// TestRegistryEndToEnd runs the official MCP Registry seeded with a remote
// server, server-everything from npm (two versions) and a package with a
// required secret, and a running elysia serve: mcp search finds them, mcp
// add writes each kind into an mcp.json with comments, the service lists
// each entry, the npm one is called through npx, mcp update moves only
// its entry to the latest version, and mcp remove takes one out.
func TestRegistryEndToEnd(t *testing.T) {
	testenv.Everything(t) // npx finds server-everything in testdata/npm
	reg := testenv.MCPRegistry(t, testenv.RegistrySeed(t))
	latest := testenv.EverythingVersion(t)

	dir := t.TempDir()
	// npx -y resolves the package from the folder's node_modules, as from
	// a project that depends on it: no download.
	if err := os.Symlink(filepath.Join(testenv.RepoRoot(), "testdata", "npm", "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`{
  // Servers of this service. elysia mcp add writes below; comments stay.
  "expose": {"mode": "tools"},
  "servers": {
    "todo": {"type": "stdio", "command": %q, "env": {"TODO_DB": "./data/todos.db"}, "cwd": "."} // local
  }
}
`, testenv.TodoMCP(t))
	s := startService(t, serveOptions{Config: cfg, Dir: dir, Env: []string{"ELYSIA_INPUT_WEATHER_API_KEY=k-weather-1234"}})
	env := []string{registryURLEnv + "=" + reg}
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		return runCLI(t, dir, env, append([]string{"mcp"}, args...)...)
	}
	waitServers := func(what string, cond func(map[string]map[string]any) bool) map[string]map[string]any {
		t.Helper()
		var got map[string]map[string]any
		testenv.WaitFor(t, 15*time.Second, what, func() bool {
			got = servers(t, s)
			return cond(got)
		})
		return got
	}

	code, out, errOut := cli("search")
	for _, name := range []string{testenv.SeedEverything, testenv.SeedRemote, testenv.SeedSecret} {
		if code != exitOK || !strings.Contains(out, name) {
			t.Errorf("mcp search = %d, %q, %q; want %s listed", code, out, errOut, name)
		}
	}
	if code, out, _ := cli("search", "every", "reference"); code != exitOK || !strings.Contains(out, testenv.SeedEverything+"  "+latest) || strings.Contains(out, testenv.SeedRemote) {
		t.Errorf("mcp search every reference = %d, %q; want only %s %s", code, out, testenv.SeedEverything, latest)
	}

	// The npm package, at its older version first.
	if code, out, errOut := cli("add", testenv.SeedEverything+"@"+testenv.SeedEverythingOld); code != exitOK || !strings.Contains(out, "npx -y @modelcontextprotocol/server-everything@"+testenv.SeedEverythingOld+" stdio") {
		t.Fatalf("mcp add everything@old = %d, %q, %q", code, out, errOut)
	}
	// The remote: Streamable HTTP first, its secret header an input the
	// service has from ELYSIA_INPUT_WEATHER_API_KEY.
	if code, out, errOut := cli("add", testenv.SeedRemote); code != exitOK || !strings.Contains(out, "ELYSIA_INPUT_WEATHER_API_KEY") {
		t.Fatalf("mcp add weather = %d, %q, %q", code, out, errOut)
	}
	// A required value without a default: named, nothing written; then
	// given.
	before, _ := os.ReadFile(s.Config)
	code, _, errOut = cli("add", testenv.SeedSecret)
	after, _ := os.ReadFile(s.Config)
	if code != exitUsage || !strings.Contains(errOut, "VAULT_NAMESPACE (Vault namespace)") || !strings.Contains(errOut, "--set VAULT_NAMESPACE=VALUE") || string(after) != string(before) {
		t.Errorf("mcp add vault without VAULT_NAMESPACE = %d, %q; want 2 naming it, nothing written", code, errOut)
	}
	if code, out, errOut := cli("add", testenv.SeedSecret, "--set", "VAULT_NAMESPACE=team"); code != exitOK || !strings.Contains(out, "ELYSIA_INPUT_VAULT_VAULT_TOKEN") {
		t.Fatalf("mcp add vault = %d, %q, %q", code, out, errOut)
	}
	// A name already in mcp.json: a clear error, nothing overwritten.
	before, _ = os.ReadFile(s.Config)
	code, _, errOut = cli("add", testenv.SeedRemote)
	after, _ = os.ReadFile(s.Config)
	if code != exitUsage || !strings.Contains(errOut, `already has a server "weather"`) || string(after) != string(before) {
		t.Errorf("mcp add weather again = %d, %q; want 2, nothing overwritten", code, errOut)
	}
	for _, c := range []string{"// Servers of this service. elysia mcp add writes below; comments stay.", "// local"} {
		if !strings.Contains(string(after), c) {
			t.Errorf("comment %q lost:\n%s", c, after)
		}
	}

	// The running service picks every entry up.
	got := waitServers("the added servers on /api/servers", func(m map[string]map[string]any) bool {
		return m["everything"] != nil && m["weather"] != nil && m["vault"] != nil
	})
	if w := got["weather"]; w["transport"] != "http" || w["url"] != "https://mcp.example.com/mcp" || w["unresolved"] != nil {
		t.Errorf("weather on /api/servers = %v; want http https://mcp.example.com/mcp, resolved", w)
	}
	if v, _ := got["vault"]["unresolved"].(string); !strings.Contains(v, "ELYSIA_INPUT_VAULT_VAULT_TOKEN") {
		t.Errorf("vault's unresolved = %q; want the secret's variable named", v)
	}
	if strings.Contains(s.Output(), "k-weather-1234") {
		t.Errorf("the weather key reached the service's log")
	}

	// update: only everything is newer, and only its entry changes.
	others := entries(t, s.Config, "todo", "weather", "vault")
	code, out, errOut = cli("update")
	if code != exitOK || !strings.Contains(out, fmt.Sprintf("%s %s → %s", testenv.SeedEverything, testenv.SeedEverythingOld, latest)) ||
		!strings.Contains(out, testenv.SeedRemote+" 1.2.0 is the latest") {
		t.Fatalf("mcp update = %d, %q, %q", code, out, errOut)
	}
	if now := entries(t, s.Config, "todo", "weather", "vault"); fmt.Sprint(now) != fmt.Sprint(others) {
		t.Errorf("update changed other entries:\nbefore %v\nafter  %v", others, now)
	}
	if e := entries(t, s.Config, "everything")["everything"]; !strings.Contains(e, "server-everything@"+latest) || !strings.Contains(e, `"version":"`+latest+`"`) {
		t.Errorf("everything after update: %s", e)
	}
	if code, out, _ := cli("update", "everything", "--dry-run"); code != exitOK || !strings.Contains(out, "is the latest") {
		t.Errorf("mcp update everything --dry-run = %d, %q; want up to date", code, out)
	}

	// The service runs the updated package through npx and calls it.
	waitServers("everything's new version on /api/servers", func(m map[string]map[string]any) bool {
		return strings.Contains(fmt.Sprint(m["everything"]["args"]), latest)
	})
	c := mcpClient(t, s.URL, "")
	var text string
	testenv.WaitFor(t, 60*time.Second, "a call of everything__echo", func() bool {
		var isErr bool
		text, isErr = callText(t, c, "everything__echo", map[string]any{"message": "hello registry"})
		return !isErr && strings.Contains(text, "hello registry")
	})

	// remove takes only that entry out.
	if code, out, errOut := cli("remove", "weather"); code != exitOK || !strings.Contains(out, `removed "weather"`) {
		t.Fatalf("mcp remove weather = %d, %q, %q", code, out, errOut)
	}
	waitServers("weather gone from /api/servers", func(m map[string]map[string]any) bool {
		return m["weather"] == nil && m["everything"] != nil && m["vault"] != nil && m["todo"] != nil
	})
	final, _ := os.ReadFile(s.Config)
	if !strings.Contains(string(final), "// local") || strings.Contains(string(final), "weather") {
		t.Errorf("mcp.json after remove:\n%s", final)
	}
}
