package discovery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/elysia-go/elysia/internal/testenv"
	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
	"github.com/elysia-go/elysia/tree"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recordingSink keeps the last placements, for tests without a tree.
type recordingSink struct {
	mu    sync.Mutex
	names []string
	calls int
}

func (s *recordingSink) SetTools(ps []tree.Placement) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	s.names = s.names[:0]
	for _, p := range ps {
		s.names = append(s.names, p.Tool.Name()+"@"+p.Branch)
	}
}

func (s *recordingSink) get() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.names...)
}

// closeDiscovery closes d, for defer, failing t if Close fails.
func closeDiscovery(t *testing.T, d *Discovery) {
	t.Helper()
	if err := d.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// writeConfig writes mcp.json the way editors that rename on save do.
func writeConfig(t *testing.T, path, body string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func todoServer(name, bin, db string) string {
	return fmt.Sprintf(`%q: {"type": "stdio", "command": %q, "env": {"TODO_DB": %q}}`, name, bin, db)
}

func servers(entries ...string) string {
	return `{"servers": {` + strings.Join(entries, ", ") + `}}`
}

func TestLoadPlacesEnabledServersInFileOrder(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mcp.json")
	writeConfig(t, path, `{"servers": {
		"zeta": {"command": "/bin/true"},
		"alpha": {"command": "/bin/true", "branch": "files"},
		"off": {"command": "/bin/true", "disabled": true}}}`)
	sink := &recordingSink{}
	d := New(path, sink, nil)
	defer closeDiscovery(t, d)
	if err := d.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(sink.get(), " ")
	if want := "mcp_zeta@ mcp_alpha@files"; got != want {
		t.Fatalf("placements = %q, want %q", got, want)
	}
	if n := len(d.Gateways()); n != 3 {
		t.Fatalf("%d gateways, want 3 (disabled ones are listed too)", n)
	}
	if _, ok := d.Gateway("mcp_alpha"); !ok {
		t.Fatal("Gateway(tool name) not found")
	}
	if _, ok := d.Gateway("alpha"); !ok {
		t.Fatal("Gateway(server name) not found")
	}
}

func TestLoadBadFileIsAConfigError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcp.json")
	writeConfig(t, path, `{"servers": {"x": {"type": "carrier-pigeon"}}}`)
	sink := &recordingSink{}
	d := New(path, sink, nil)
	defer closeDiscovery(t, d)
	err := d.Load(t.Context())
	if !errors.Is(err, mcpconfig.ErrInvalidConfig) {
		t.Fatalf("Load error = %v, want ErrInvalidConfig", err)
	}
	if !strings.Contains(err.Error(), "mcp.json:1:") {
		t.Fatalf("error %q does not name file and line", err)
	}
	if sink.calls != 0 {
		t.Fatal("a bad file placed tools")
	}
}

// liveTree returns the option ids of the root of a conversation's tree.
func liveTree(t *testing.T, m *tree.Manager, user, conv string) []string {
	t.Helper()
	c, err := m.Conversation(context.Background(), user, conv)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(c.Tree())
	if err != nil {
		t.Fatal(err)
	}
	var node struct {
		Options map[string]json.RawMessage `json:"options"`
	}
	if err := json.Unmarshal(b, &node); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for id := range node.Options {
		ids = append(ids, id)
	}
	return ids
}

func hasTool(ids []string, name string) bool {
	for _, id := range ids {
		if id == name {
			return true
		}
	}
	return false
}

func processAlive(pid int) bool {
	return pid > 0 && syscall.Kill(pid, 0) == nil
}

// TestWatchAddsChangesAndRemovesServers drives a real todo-mcp through the
// whole life of a server in mcp.json: added, used, changed (its process is
// replaced), broken (the last good config stays), and removed (its process
// ends), with the live trees following every step.
func TestWatchAddsChangesAndRemovesServers(t *testing.T) {
	bin := testenv.TodoMCP(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "mcp.json")
	dbA := filepath.Join(dir, "a.db")
	writeConfig(t, path, servers(todoServer("todo", bin, dbA)))

	m := tree.NewManager(nil)
	reloads := make(chan error, 64)
	d := New(path, m, &Options{
		Debounce:   20 * time.Millisecond,
		DrainGrace: 5 * time.Second,
		Gateway:    &mcpgateway.Options{CloseGrace: 500 * time.Millisecond},
		OnReload:   func(err error) { reloads <- err },
	})
	defer closeDiscovery(t, d)
	if err := d.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := d.Watch(); err != nil {
		t.Fatal(err)
	}
	if ids := liveTree(t, m, "alice", "c1"); !hasTool(ids, "mcp_todo") {
		t.Fatalf("root options %v lack mcp_todo", ids)
	}

	// Use the server so it has a process.
	g, _ := d.Gateway("todo")
	if _, err := g.Execute(t.Context(), "create_todo", map[string]any{"title": "first"}); err != nil {
		t.Fatal(err)
	}
	firstPID := g.Status().PID
	if !processAlive(firstPID) {
		t.Fatalf("todo-mcp pid %d not running after a call", firstPID)
	}

	// Add a server: it reaches a conversation created before the change.
	writeConfig(t, path, servers(todoServer("todo", bin, dbA), todoServer("notes", bin, filepath.Join(dir, "n.db"))))
	testenv.WaitFor(t, 5*time.Second, "mcp_notes in the live tree", func() bool {
		return hasTool(liveTree(t, m, "alice", "c1"), "mcp_notes")
	})
	if g2, _ := d.Gateway("todo"); g2 != g {
		t.Fatal("an unchanged server was replaced")
	}

	// Break the file: the last good config stays in force.
	writeConfig(t, path, `{"servers": {"todo": `)
	testenv.WaitFor(t, 5*time.Second, "the config error", func() bool { return d.ConfigError() != nil })
	if !strings.Contains(d.ConfigError().Error(), "mcp.json") {
		t.Fatalf("config error %q does not name the file", d.ConfigError())
	}
	if ids := liveTree(t, m, "alice", "c1"); !hasTool(ids, "mcp_todo") || !hasTool(ids, "mcp_notes") {
		t.Fatalf("a bad file changed the tree: %v", ids)
	}

	// Change the todo server (new database): its process is replaced.
	dbB := filepath.Join(dir, "b.db")
	writeConfig(t, path, servers(todoServer("todo", bin, dbB)))
	testenv.WaitFor(t, 5*time.Second, "mcp_notes to leave the tree", func() bool {
		return !hasTool(liveTree(t, m, "alice", "c1"), "mcp_notes")
	})
	if d.ConfigError() != nil {
		t.Fatalf("config error after a good file: %v", d.ConfigError())
	}
	testenv.WaitFor(t, 10*time.Second, "the replaced server's process to end", func() bool { return !processAlive(firstPID) })
	g3, _ := d.Gateway("todo")
	if g3 == g {
		t.Fatal("a changed server kept its old gateway")
	}
	res, err := g3.Execute(t.Context(), "list_todos", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(res.Text(), "first") {
		t.Fatalf("the replaced server still reads the old database: %s", res.Text())
	}

	// Remove everything: the gateway leaves every tree and its process ends.
	pid := g3.Status().PID
	writeConfig(t, path, `{"servers": {}}`)
	testenv.WaitFor(t, 5*time.Second, "mcp_todo to leave the tree", func() bool {
		return !hasTool(liveTree(t, m, "alice", "c1"), "mcp_todo")
	})
	testenv.WaitFor(t, 10*time.Second, "the removed server's process to end", func() bool { return !processAlive(pid) })
}

// TestRapidEditsEndInTheLastGoodConfig makes 20 quick edits, some invalid,
// and checks the service settles on the last valid file.
func TestRapidEditsEndInTheLastGoodConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mcp.json")
	writeConfig(t, path, `{"servers": {"s0": {"command": "/bin/true"}}}`)
	sink := &recordingSink{}
	d := New(path, sink, &Options{Debounce: 20 * time.Millisecond})
	defer closeDiscovery(t, d)
	if err := d.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := d.Watch(); err != nil {
		t.Fatal(err)
	}
	last := ""
	for i := 1; i <= 20; i++ {
		if i%3 == 0 {
			writeConfig(t, path, `{"servers": [`) // invalid
			continue
		}
		last = fmt.Sprintf("s%d", i)
		writeConfig(t, path, fmt.Sprintf(`{"servers": {%q: {"command": "/bin/true"}}}`, last))
	}
	want := "mcp_" + last + "@"
	testenv.WaitFor(t, 5*time.Second, "the last good config ("+want+")", func() bool {
		got := sink.get()
		return len(got) == 1 && got[0] == want
	})
}

// TestReloadDoesNotPrompt checks that inputs are asked for at start-up only,
// and that a reload reuses the answer instead of losing the server.
func TestReloadDoesNotPrompt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcp.json")
	writeConfig(t, path, `{"inputs": [{"type": "promptString", "id": "tok", "password": true}],
		"servers": {"s": {"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer ${input:tok}"}}}}`)
	prompts := 0
	d := New(path, &recordingSink{}, &Options{Load: &mcpconfig.LoadOptions{
		LookupEnv: func(string) (string, bool) { return "", false },
		Prompt:    func(mcpconfig.Input) (string, error) { prompts++; return "s3cret-value", nil },
	}})
	defer closeDiscovery(t, d)
	if err := d.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	if prompts != 1 {
		t.Fatalf("start-up prompted %d times, want 1", prompts)
	}
	if err := d.Reload(t.Context()); err != nil {
		t.Fatal(err)
	}
	if prompts != 1 {
		t.Fatalf("reload prompted (%d prompts in all)", prompts)
	}
	g, _ := d.Gateway("s")
	if u := g.Config().Unresolved; u != "" {
		t.Fatalf("after a reload the input is unresolved: %s", u)
	}
}

// TestWatchAfterCloseIsRefused checks that nothing is started once Close has
// begun: a late Watch gets ErrClosed instead of a goroutine Close never
// waits for.
func TestWatchAfterCloseIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcp.json")
	writeConfig(t, path, `{"servers": {}}`)
	d := New(path, &recordingSink{}, nil)
	if err := d.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Watch(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Watch after Close = %v, want ErrClosed", err)
	}
}

// TestReloadUnchangedFileKeepsGatewaysWithInputDefaults reloads an
// identical mcp.json whose stdio server takes an ${input:} with a default
// and no ELYSIA_INPUT_ variable. A reload must resolve the input as
// start-up did (to its default, without a terminal), so the server is
// unchanged: same *Gateway, same child process.
func TestReloadUnchangedFileKeepsGatewaysWithInputDefaults(t *testing.T) {
	bin := testenv.TodoMCP(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "mcp.json")
	db := filepath.Join(dir, "todos.db")
	writeConfig(t, path, fmt.Sprintf(`{
		"inputs": [{"type": "promptString", "id": "db", "default": %q}],
		"servers": {"todo": {"type": "stdio", "command": %q, "env": {"TODO_DB": "${input:db}"}}}}`, db, bin))
	for _, tt := range []struct {
		name   string
		prompt func(mcpconfig.Input) (string, error)
	}{
		{"no terminal", nil},
		// A terminal at start-up that answers with the default when the
		// operator just presses Enter.
		{"terminal", func(in mcpconfig.Input) (string, error) { return in.Default, nil }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := New(path, &recordingSink{}, &Options{
				Load: &mcpconfig.LoadOptions{
					LookupEnv: func(string) (string, bool) { return "", false },
					Prompt:    tt.prompt,
				},
				Gateway: &mcpgateway.Options{CloseGrace: 500 * time.Millisecond},
			})
			defer closeDiscovery(t, d)
			if err := d.Load(t.Context()); err != nil {
				t.Fatal(err)
			}
			g, _ := d.Gateway("todo")
			if u := g.Config().Unresolved; u != "" {
				t.Fatalf("at start-up the server is unresolved: %s", u)
			}
			if _, err := g.Execute(t.Context(), "list_todos", map[string]any{}); err != nil {
				t.Fatal(err)
			}
			pid := g.Status().PID
			if !processAlive(pid) {
				t.Fatalf("todo-mcp pid %d not running after a call", pid)
			}

			if err := d.Reload(t.Context()); err != nil {
				t.Fatal(err)
			}
			got, _ := d.Gateway("todo")
			if got != g {
				t.Fatalf("reloading an unchanged file replaced the gateway (unresolved: %q)", got.Config().Unresolved)
			}
			if got := got.Status().PID; got != pid {
				t.Fatalf("child pid after reload = %d, want %d", got, pid)
			}
			if !processAlive(pid) {
				t.Fatalf("the child %d ended on a reload of an unchanged file", pid)
			}
		})
	}
}

// TestReloadRemembersServerInputsPerServer gives two servers their own
// input with the same id (the list shape's per-server "inputs"), answered
// differently at start-up: a reload must give each server its own answer
// back, not the last one typed.
func TestReloadRemembersServerInputsPerServer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcp.json")
	writeConfig(t, path, `{"servers": [
		{"name": "a", "type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer ${input:tok}"},
		 "inputs": [{"type": "promptString", "id": "tok", "description": "token for a"}]},
		{"name": "b", "type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer ${input:tok}"},
		 "inputs": [{"type": "promptString", "id": "tok", "description": "token for b"}]}]}`)
	answers := map[string]string{"token for a": "secret-of-a", "token for b": "secret-of-b"}
	d := New(path, &recordingSink{}, &Options{Load: &mcpconfig.LoadOptions{
		LookupEnv: func(string) (string, bool) { return "", false },
		Prompt:    func(in mcpconfig.Input) (string, error) { return answers[in.Description], nil },
	}})
	defer closeDiscovery(t, d)
	if err := d.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	before := d.Gateways()
	if err := d.Reload(t.Context()); err != nil {
		t.Fatal(err)
	}
	after := d.Gateways()
	if len(after) != len(before) {
		t.Fatalf("reload changed the number of gateways: %d, want %d", len(after), len(before))
	}
	for i := range before {
		if after[i] != before[i] {
			c := after[i].Config()
			t.Errorf("server %q was replaced on an unchanged reload (unresolved: %q)", c.Name, c.Unresolved)
		}
	}
}

// TestReloadEnvFileErrorNamesKeyNotValue breaks a server's envFile and
// reloads: the error kept for /api/servers and the reload log name the
// file, the line and the key (where the line has one), never the value.
func TestReloadEnvFileErrorNamesKeyNotValue(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mcp.json")
	envFile := filepath.Join(dir, "todo.env")
	const secret = "s3cret-in-envfile"
	if err := os.WriteFile(envFile, []byte("API_KEY="+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	writeConfig(t, path, `{"servers": {"s": {"command": "/bin/true", "envFile": "todo.env"}}}`)
	var logs testenv.SyncBuffer
	d := New(path, &recordingSink{}, &Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	defer closeDiscovery(t, d)
	if err := d.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Line 2 lost its "=", line 3 has text after a closing quote.
	if err := os.WriteFile(envFile, []byte("OTHER=1\nAPI_KEY: "+secret+"\nTOKEN=\"part\" "+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := d.Reload(t.Context())
	if err == nil {
		t.Fatal("Reload with a broken envFile succeeded")
	}
	for what, text := range map[string]string{"Reload's error": err.Error(), "ConfigError": fmt.Sprint(d.ConfigError()), "the log": logs.String()} {
		if strings.Contains(text, secret) {
			t.Errorf("%s shows the value: %s", what, text)
		}
		if !strings.Contains(text, envFile+":2:1: ") || !strings.Contains(text, envFile+":3:1: ") {
			t.Errorf("%s = %q, want the file and lines 2 and 3", what, text)
		}
		if !strings.Contains(text, "TOKEN") {
			t.Errorf("%s = %q, want the key TOKEN named", what, text)
		}
	}
}

// TestReloadReplaysAFailedPrompt: when the start-up prompt failed for an
// input without a default, the server is unresolved; a reload of the same
// file must give the same reason, so the server is unchanged and keeps its
// gateway.
func TestReloadReplaysAFailedPrompt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcp.json")
	writeConfig(t, path, `{"inputs": [{"type": "promptString", "id": "tok", "password": true}],
		"servers": {"s": {"command": "/bin/true", "env": {"TOKEN": "${input:tok}"}}}}`)
	d := New(path, &recordingSink{}, &Options{Load: &mcpconfig.LoadOptions{
		LookupEnv: func(string) (string, bool) { return "", false },
		Prompt:    func(mcpconfig.Input) (string, error) { return "", errors.New("terminal closed") },
	}})
	defer closeDiscovery(t, d)
	if err := d.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	g, _ := d.Gateway("s")
	before := g.Config().Unresolved
	if !strings.Contains(before, "terminal closed") {
		t.Fatalf("Unresolved = %q, want the prompt's error", before)
	}
	if err := d.Reload(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got, _ := d.Gateway("s"); got != g {
		t.Errorf("reload replaced the gateway: Unresolved %q, was %q", got.Config().Unresolved, before)
	}
}

// TestReloadAdoptsNewRootsInPlace: an edit of a server's roots keeps its
// gateway (the session is told with roots/list_changed), an edit of
// anything a session cannot be told about replaces it.
func TestReloadAdoptsNewRootsInPlace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mcp.json")
	withRoots := func(extra string) string {
		return fmt.Sprintf(`{"servers": {"x": {"command": "x-mcp", "roots": ["./a"%s]}}}`, extra)
	}
	writeConfig(t, path, withRoots(""))
	d := New(path, &recordingSink{}, nil)
	defer closeDiscovery(t, d)
	if err := d.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	g, _ := d.Gateway("x")

	writeConfig(t, path, withRoots(`, "./b"`))
	if err := d.Reload(t.Context()); err != nil {
		t.Fatal(err)
	}
	got, _ := d.Gateway("x")
	want := []string{filepath.Join(dir, "a"), filepath.Join(dir, "b")}
	if got != g || !slices.Equal(got.Config().Roots, want) {
		t.Fatalf("after a roots edit: same gateway %v, roots %q, want %q", got == g, got.Config().Roots, want)
	}

	writeConfig(t, path, `{"servers": {"x": {"command": "x-mcp", "roots": ["./a", "./b"], "sampling": true}}}`)
	if err := d.Reload(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got, _ := d.Gateway("x"); got == g || !got.Config().Sampling.Enabled() {
		t.Errorf("turning sampling on kept the gateway (sampling %v)", got.Config().Sampling)
	}
}
