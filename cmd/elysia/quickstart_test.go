//go:build unix

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/elysia-go/elysia/internal/testenv"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// quickStartEnv is set in the environment of the quick start's commands:
// a test that finds it set is inside them, and does not start them again.
const quickStartEnv = "ELYSIA_QUICK_START_TEST"

// quickStartTimeout bounds the whole quick start: a clone, a build, a
// service and a query.
const quickStartTimeout = 5 * time.Minute

// quickStart is what README's quick start tells a new user to do.
type quickStart struct {
	setup []string // the first code block's commands, in order
	urls  []string // the http://127.0.0.1:8000 addresses its prose sends a browser to
	query []string // the ./bin/elysia query block's commands
}

// readmeDefaultAddr is the address README's prose gives; the test serves
// on a free port instead, through the Makefile's ADDR.
const readmeDefaultAddr = "127.0.0.1:8000"

// parseQuickStart reads README's quick start: the first ```sh block, then
// the prose up to the next ```sh block that runs ./bin/elysia query, and
// that block.
func parseQuickStart(tb testing.TB, readme string) quickStart {
	tb.Helper()
	blocks := regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatchIndex(readme, -1)
	if len(blocks) == 0 {
		tb.Fatal("README.md has no ```sh block: where is the quick start?")
	}
	var qs quickStart
	qs.setup = commandLines(readme[blocks[0][2]:blocks[0][3]])
	for _, b := range blocks[1:] {
		cmds := commandLines(readme[b[2]:b[3]])
		if len(cmds) > 0 && strings.HasPrefix(cmds[0], "./bin/elysia query ") {
			qs.query = cmds
			prose := readme[blocks[0][1]:b[0]]
			qs.urls = regexp.MustCompile(`http://`+regexp.QuoteMeta(readmeDefaultAddr)+`[^\s>)\x60]*`).FindAllString(prose, -1)
			break
		}
	}
	if len(qs.setup) == 0 || len(qs.query) == 0 {
		tb.Fatalf("README's quick start: want a first ```sh block of commands and a ./bin/elysia query block after it; got %q and %q", qs.setup, qs.query)
	}
	return qs
}

// commandLines returns a code block's commands without their comments.
func commandLines(block string) []string {
	var out []string
	for line := range strings.SplitSeq(block, "\n") {
		if line = strings.TrimSpace(stripComment(line)); line != "" {
			out = append(out, line)
		}
	}
	return out
}

// stripComment cuts a shell comment ("  # ...") off line, outside quotes.
func stripComment(line string) string {
	var quote rune
	for i, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return line[:i]
		}
	}
	return line
}

// TestReadmeQuickStart follows README's quick start word for word on a
// clean checkout (a git clone of HEAD): each command of the first block in
// turn (`make run` in the background until /readyz answers; `make test`
// only as a dry run, make -n, since it is what runs this test), then the
// URL make printed and README's addresses are fetched, the served tree
// must hold a gateway for every server of the clone's mcp.json, and the
// ./bin/elysia query block must run and answer what it asked, without
// saving the conversation. It fails when README's commands stop working.
func TestReadmeQuickStart(t *testing.T) {
	testenv.Integration(t)
	if os.Getenv(quickStartEnv) != "" {
		t.Skip("inside the quick start's own commands")
	}
	for _, tool := range []string{"go", "node", "make", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Missing(t, "%s is not installed, and README's quick start needs it", tool)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), quickStartTimeout)
	defer cancel()
	dir := filepath.Join(t.TempDir(), "elysia-go")
	if out, err := exec.CommandContext(ctx, "git", "clone", "--quiet", testenv.RepoRoot(), dir).CombinedOutput(); err != nil {
		t.Fatalf("git clone of the repository: %v\n%s", err, out)
	}
	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	qs := parseQuickStart(t, string(readme))
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	env := append(userShellEnv(), "ADDR="+addr, quickStartEnv+"=1", "XDG_DATA_HOME="+testDataHome(t))
	var served *makeRun
	for _, c := range qs.setup {
		switch c {
		case "make run":
			served = startMakeRun(ctx, t, dir, env, addr)
		case "make test":
			// Running it would run this test again: check that make knows
			// how, without doing it (make -n passes -n to its sub-makes).
			if out, err := shell(ctx, dir, env, "make -n test"); err != nil {
				t.Errorf("make -n test: %v\n%s", err, out)
			}
		default:
			if out, err := shell(ctx, dir, env, c); err != nil {
				t.Fatalf("README's %q: %v\n%s", c, err, out)
			}
		}
	}
	if served == nil {
		t.Fatalf("README's first block %q does not start the service with make run", qs.setup)
	}

	// The URL make printed, and the addresses README sends a browser to.
	printed := regexp.MustCompile(`http://\S+`).FindString(served.out.String())
	if !strings.HasPrefix(printed, "http://"+addr+"/") {
		t.Errorf("make run printed no URL of the service at %s:\n%s", addr, served.out.String())
	} else {
		getPage(ctx, t, printed)
	}
	if len(qs.urls) == 0 {
		t.Errorf("README's quick start names no http://%s address to open", readmeDefaultAddr)
	}
	for _, u := range qs.urls {
		getPage(ctx, t, strings.Replace(u, readmeDefaultAddr, addr, 1))
	}

	// The tree holds a gateway for every enabled server of mcp.json.
	cfg, err := mcpconfig.Load(filepath.Join(dir, "mcp.json"), nil)
	if err != nil {
		t.Fatalf("the clone's mcp.json: %v", err)
	}
	var tr struct {
		Tree struct {
			Options map[string]json.RawMessage `json:"options"`
		} `json:"tree"`
	}
	getJSON(ctx, t, "http://"+addr+"/tree/cli/first", &tr)
	for _, s := range cfg.Servers {
		if _, ok := tr.Tree.Options[mcpconfig.ToolName(s.Name)]; s.Enabled && !ok {
			t.Errorf("the tree served has no gateway for the server %q of mcp.json (options %v)", s.Name, keysOf(tr.Tree.Options))
		}
	}
	if _, err := os.Stat(filepath.Join(testDataHome(t), "elysia", "elysia.db")); err != nil {
		t.Errorf("README says conversations are saved in the user's data folder: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "elysia.db")); err == nil {
		t.Errorf("make run wrote its database into the clone, not the user's data folder")
	}

	// The query block, while the service runs: the offline planner answers
	// and does what was asked, and the run is not saved: the page's user,
	// the CLI's too, has as many conversations after it as before.
	var convs struct {
		Conversations []json.RawMessage `json:"conversations"`
	}
	getJSON(ctx, t, "http://"+addr+"/conversations/"+defaultUser, &convs)
	before := len(convs.Conversations)
	for _, c := range qs.query {
		out, err := shell(ctx, dir, env, c)
		if err != nil {
			t.Fatalf("README's %q: %v\n%s", c, err, out)
		}
		if !strings.Contains(out, "[offline planner]") {
			t.Errorf("README's %q: no answer of the offline planner:\n%s", c, out)
		}
		if m := regexp.MustCompile(`"([^"]+)"`).FindStringSubmatch(c); m != nil && !strings.Contains(out[strings.LastIndex(out, "[offline planner]")+1:], m[1]) {
			t.Errorf("README's %q: the answer does not mention %q:\n%s", c, m[1], out)
		}
	}
	getJSON(ctx, t, "http://"+addr+"/conversations/"+defaultUser, &convs)
	if len(convs.Conversations) != before {
		t.Errorf("README says a query's run is not saved, but the service lists %d conversations of %s, %d before it",
			len(convs.Conversations), defaultUser, before)
	}
	served.stop(t)
}

// userShellEnv is cleanEnv without what a make running this test passes
// its children (its jobserver's descriptors are not theirs): the quick
// start is typed in a shell, not run from make.
func userShellEnv() []string {
	var out []string
	for _, kv := range cleanEnv() {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "MAKE_TERMOUT", "MAKE_TERMERR":
			continue
		}
		out = append(out, kv)
	}
	return out
}

// shell runs one of README's command lines with sh in dir, as a user
// pasting it would, and returns its output.
func shell(ctx context.Context, dir string, env []string, line string) (string, error) {
	cmd := exec.CommandContext(ctx, "sh", "-c", line)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// makeRun is `make run` running in the background, in a process group of
// its own so that stopping it stops the service make started.
type makeRun struct {
	cmd    *exec.Cmd
	out    *testenv.SyncBuffer
	exited chan error
}

// startMakeRun runs `make run` in dir and waits until the service answers
// /readyz on addr.
func startMakeRun(ctx context.Context, t *testing.T, dir string, env []string, addr string) *makeRun {
	t.Helper()
	cmd := exec.Command("make", "run")
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	m := &makeRun{cmd: cmd, out: &testenv.SyncBuffer{Limit: 1 << 20}, exited: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = m.out, m.out
	if err := cmd.Start(); err != nil {
		t.Fatalf("make run: %v", err)
	}
	go func() { m.exited <- cmd.Wait() }()
	t.Cleanup(func() { m.stop(t) })
	deadline, _ := ctx.Deadline()
	testenv.WaitFor(t, time.Until(deadline), "make run to serve /readyz", func() bool {
		select {
		case err := <-m.exited:
			m.exited <- err
			t.Fatalf("make run exited (%v) before serving:\n%s", err, m.out.String())
		default:
		}
		status, _, _, err := fetch(ctx, "http://"+addr+"/readyz", "application/json")
		return err == nil && status == http.StatusOK
	})
	return m
}

// stop interrupts make and the service (Ctrl-C in the terminal) and waits
// for make; after 20 s the group is killed. Idempotent.
func (m *makeRun) stop(t *testing.T) {
	t.Helper()
	select {
	case err := <-m.exited: // stopped already: its group may be gone
		m.exited <- err
		return
	default:
	}
	pgid := m.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGINT)
	select {
	case err := <-m.exited:
		m.exited <- err
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		m.exited <- <-m.exited
		t.Errorf("make run did not stop within 20 s of Ctrl-C:\n%s", m.out.String())
	}
}

// fetch GETs url with the Accept header accept and returns the status,
// the content type and (at most 8 MiB of) the body.
func fetch(ctx context.Context, url, accept string) (status int, contentType string, body []byte, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", nil, err
	}
	req.Header.Set("Accept", accept)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer func() { _ = resp.Body.Close() }() // read below
	body, err = io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	return resp.StatusCode, resp.Header.Get("Content-Type"), body, err
}

// getPage fetches url as a browser does and wants a 200 HTML page.
func getPage(ctx context.Context, t *testing.T, url string) {
	t.Helper()
	status, ct, body, err := fetch(ctx, url, "text/html,application/xhtml+xml,*/*;q=0.8")
	switch {
	case err != nil:
		t.Errorf("GET %s: %v", url, err)
	case status != http.StatusOK || !strings.HasPrefix(ct, "text/html"):
		t.Errorf("GET %s in a browser: %d %s; want a 200 page\n%.300s", url, status, ct, body)
	}
}

// getJSON fetches url as an API client and decodes its 200 answer into v.
func getJSON(ctx context.Context, t *testing.T, url string, v any) {
	t.Helper()
	status, _, body, err := fetch(ctx, url, "application/json")
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	if status != http.StatusOK {
		t.Fatalf("GET %s: %d\n%.300s", url, status, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v\n%.300s", url, err, body)
	}
}

func keysOf(m map[string]json.RawMessage) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
