package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

func writeFile(tb testing.TB, path, body string) {
	tb.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		tb.Fatal(err)
	}
}

// exitCode returns a command's exit code (0 for a nil error).
func exitCode(err error) int {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	return -1
}

// runCLI runs the elysia binary in dir and returns its exit code, stdout and
// stderr. Its default database is the test's own (testDataHome).
func runCLI(tb testing.TB, dir string, env []string, args ...string) (int, string, string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(tb.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, elysiaBin(tb), args...)
	cmd.Dir = dir
	cmd.Env = append(append(cleanEnv(), "XDG_DATA_HOME="+testDataHome(tb)), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := exitCode(err)
	if code < 0 {
		tb.Fatalf("elysia %v: %v", args, err)
	}
	return code, out.String(), errb.String()
}

// TestConfigCheck validates good and bad mcp.json files.
func TestConfigCheck(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	writeFile(t, good, defaultConfig(t))
	code, out, errOut := runCLI(t, dir, nil, "config", "check", good)
	if code != 0 || !strings.Contains(out, "ok, 1 server(s)") || !strings.Contains(out, "mcp_todo") {
		t.Errorf("config check on a good file: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = runCLI(t, dir, nil, "config", "check", "--config", good)
	if code != 0 {
		t.Errorf("config check --config: exit %d\n%s", code, out)
	}

	for _, c := range []struct {
		name, body string
		want       []string // in the message besides file:line:col
	}{
		{"unknown type", `{"servers": {
  "x": {"type": "carrier-pigeon", "command": "y"}}}`, []string{"carrier-pigeon"}},
		{"duplicate name", `{"servers": {
  "a": {"command": "x"},
  "a": {"command": "y"}}}`, []string{`"a"`}},
		// Comments and trailing commas are fine (VS Code's JSONC); a
		// missing value is not.
		{"bad JSON", `{"servers": {
  "a": {"command": }}}`, nil},
		{"JSONC is accepted", `{"servers": { // comment
  "a": {"command": "x",},}}`, nil},
		{"colliding names", `{"servers": {
  "a-b": {"command": "x"},
  "a_b": {"command": "y"}}}`, []string{"a-b", "a_b", "mcp_a_b"}},
		{"missing command", `{"servers": {
  "a": {"type": "stdio"}}}`, []string{"command"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+".json")
			writeFile(t, f, c.body)
			code, out, errOut := runCLI(t, dir, nil, "config", "check", f)
			if c.name == "JSONC is accepted" {
				if code != 0 {
					t.Errorf("exit %d, want 0\n%s%s", code, out, errOut)
				}
				return
			}
			if code != exitUsage {
				t.Fatalf("exit %d, want 2\n%s%s", code, out, errOut)
			}
			loc := regexp.MustCompile(regexp.QuoteMeta(f) + `:\d+:\d+`)
			if !loc.MatchString(errOut) {
				t.Errorf("error does not give file:line:col:\n%s", errOut)
			}
			for _, w := range c.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("error does not mention %s:\n%s", w, errOut)
				}
			}
		})
	}
}

// TestMCPCommands runs mcp list, mcp call and tree against todo-mcp.
func TestMCPCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := strings.Replace(defaultConfig(t), `{"servers": {`, `{"inputs": [{"type": "promptString", "id": "tok", "password": true}], "servers": {`, 1)
	cfg = strings.Replace(cfg, `}}}`, fmt.Sprintf(`}, "locked": {"command": %q, "env": {"TOKEN": "${input:tok}"}},
		"mine": {"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer ${user:TOKEN}"}}}}`, "./nothing"), 1)
	writeFile(t, filepath.Join(dir, "mcp.json"), cfg)

	code, out, errOut := runCLI(t, dir, nil, "mcp", "list")
	if code != 0 {
		t.Fatalf("mcp list: exit %d\n%s%s", code, out, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "SERVER") {
		t.Fatalf("mcp list summary:\n%s", out)
	}
	if f := strings.Fields(lines[1]); len(f) < 4 || f[0] != "todo" || f[1] != "mcp_todo" || f[2] != "stdio" {
		t.Errorf("mcp list todo line: %q", lines[1])
	}
	if !strings.Contains(lines[2], "locked") || !strings.Contains(lines[2], "tok") {
		t.Errorf("mcp list does not say why locked cannot run: %q", lines[2])
	}
	// The note comes from the status GET /api/servers shows (the user's
	// missing secrets), not from a second reading of the gateway.
	if !strings.Contains(lines[3], "mine") || !strings.Contains(lines[3], "needs_sign_in: cli must set TOKEN") {
		t.Errorf("mcp list does not say which secret mine needs: %q", lines[3])
	}

	code, out, errOut = runCLI(t, dir, nil, "mcp", "list", "todo")
	if code != 0 || !strings.Contains(out, "todo (stdio): 5 tool(s)") || !strings.Contains(out, "create_todo(title*, description, priority, tags, due_date)") {
		t.Errorf("mcp list todo: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, dir, nil, "mcp", "list", "nope")
	if code != exitUsage || !strings.Contains(errOut, "todo") {
		t.Errorf("mcp list of an unknown server: exit %d\n%s%s", code, out, errOut)
	}

	code, out, errOut = runCLI(t, dir, nil, "mcp", "call", "todo", "create_todo", `{"title":"x"}`)
	if code != 0 || !strings.Contains(out, `"x"`) {
		t.Errorf("mcp call create_todo: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, dir, nil, "mcp", "call", "todo", "create_todo", `{"priority":9}`)
	if code != exitFailure || !strings.Contains(errOut, "invalid tool_inputs for create_todo") {
		t.Errorf("mcp call with bad inputs: exit %d, want 1\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, dir, nil, "mcp", "call", "todo", "list_todos")
	if code != 0 || !strings.Contains(out, "x") {
		t.Errorf("mcp call list_todos after create: exit %d\n%s%s", code, out, errOut)
	}
	code, _, errOut = runCLI(t, dir, nil, "mcp", "call", "todo", "create_todo", `{not json`)
	if code != exitUsage {
		t.Errorf("mcp call with bad JSON: exit %d, want 2\n%s", code, errOut)
	}

	code, out, errOut = runCLI(t, dir, nil, "tree")
	if code != 0 || !strings.Contains(out, "📁 base") || !strings.Contains(out, "🔧 mcp_todo") {
		t.Errorf("tree: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = runCLI(t, dir, nil, "tree", "--mode", "multi_branch")
	if code != 0 || !strings.Contains(out, "📁 mcp") {
		t.Errorf("tree --mode multi_branch: exit %d\n%s", code, out)
	}

	for _, args := range [][]string{{"frobnicate"}, {}, {"mcp"}, {"mcp", "dance"}, {"config"}, {"serve", "--no-such-flag"}} {
		if code, out, errOut := runCLI(t, dir, nil, args...); code != exitUsage {
			t.Errorf("elysia %v: exit %d, want 2\n%s%s", args, code, out, errOut)
		}
	}
}

// TestQueryCommand runs `elysia query --json` with the offline planner.
func TestQueryCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "mcp.json"), defaultConfig(t))
	code, out, errOut := runCLI(t, dir, nil, "query", "--json", `create a todo titled "From the CLI" with priority=3`)
	if code != 0 {
		t.Fatalf("query --json: exit %d\n%s%s", code, out, errOut)
	}
	var evs []envelope
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var e envelope
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("query --json printed a line that is not an envelope: %v: %s", err, line)
		}
		evs = append(evs, e)
	}
	if len(evs) == 0 || evs[len(evs)-1].Type != "completed" || evs[0].UserID != "cli" {
		t.Fatalf("query --json events: %v", types(evs))
	}
	if got := lastText(t, evs); !strings.HasPrefix(got, "[offline planner]") {
		t.Errorf("answer = %q", got)
	}
	code, out, _ = runCLI(t, dir, nil, "mcp", "call", "todo", "list_todos")
	if code != 0 || !strings.Contains(out, "From the CLI") {
		t.Errorf("the query did not create the todo: %s", out)
	}

	code, out, errOut = runCLI(t, dir, nil, "query", "list my todos")
	if code != 0 || !strings.Contains(out, "[offline planner]") {
		t.Errorf("query (text): exit %d\n%s%s", code, out, errOut)
	}
	if code, _, _ := runCLI(t, dir, nil, "query"); code != exitUsage {
		t.Errorf("query without text: exit %d, want 2", code)
	}
}

// TestParseFlagsAnywhere checks that flags may come before, between and
// after positional arguments, that the flag set decides which flags take a
// value, and that "--" ends the flags.
func TestParseFlagsAnywhere(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantConfig string
		wantJSON   bool
		wantMode   string
		wantArgs   []string
		wantCode   int // of the error; 0 for none
	}{
		{"flags after positionals", []string{"todo", "--config", "x.json"}, "x.json", false, "m0", []string{"todo"}, 0},
		{"interleaved", []string{"a", "--json", "b", "--mode=m", "c", "-config", "y.json"}, "y.json", true, "m", []string{"a", "b", "c"}, 0},
		{"flags first", []string{"--config=z.json", "--mode", "m2", "a"}, "z.json", false, "m2", []string{"a"}, 0},
		{"bool takes no value", []string{"--json", "a"}, "mcp.json", true, "m0", []string{"a"}, 0},
		{"bool with =false", []string{"a", "--json=false"}, "mcp.json", false, "m0", []string{"a"}, 0},
		{"value looks like a flag", []string{"--mode", "-weird", "a"}, "mcp.json", false, "-weird", []string{"a"}, 0},
		{"double dash ends flags", []string{"a", "--", "--json", "-x", "--"}, "mcp.json", false, "m0", []string{"a", "--json", "-x", "--"}, 0},
		{"lone dash is an argument", []string{"-", "--json"}, "mcp.json", true, "m0", []string{"-"}, 0},
		{"no arguments", nil, "mcp.json", false, "m0", nil, 0},
		{"unknown flag after an argument", []string{"a", "--nope"}, "", false, "", nil, exitUsage},
		{"missing value at the end", []string{"a", "--config"}, "", false, "", nil, exitUsage},
		{"help after an argument", []string{"a", "-h"}, "", false, "", nil, exitOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs, config := newFlags("test", io.Discard)
			asJSON := fs.Bool("json", false, "")
			mode := fs.String("mode", "m0", "")
			err := parseFlags(fs, tt.args)
			if tt.wantCode != 0 || err != nil {
				var ee *exitError
				var he *helpError
				if tt.wantCode == exitOK && errors.As(err, &he) && errors.Is(err, flag.ErrHelp) {
					return // run prints the help on stdout and exits 0
				}
				if !errors.As(err, &ee) || ee.code != tt.wantCode {
					t.Fatalf("parseFlags(%q) = %v, want an exit code %d", tt.args, err, tt.wantCode)
				}
				return
			}
			got := []any{*config, *asJSON, *mode, fs.Args()}
			want := []any{tt.wantConfig, tt.wantJSON, tt.wantMode, tt.wantArgs}
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("parseFlags(%q) (-want +got):\n%s", tt.args, diff)
			}
		})
	}
}

// TestGlobalFlagsBeforeCommand runs commands in process with --config
// before the command, after it, and after the command's arguments.
func TestGlobalFlagsBeforeCommand(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "other.json")
	writeFile(t, cfg, `{"servers": {"only": {"command": "/bin/true"}}}`)
	for _, args := range [][]string{
		{"--config", cfg, "config", "check"},
		{"-config=" + cfg, "config", "check"},
		{"config", "check", "--config", cfg},
		{"--config", cfg, "mcp", "list"},
		{"mcp", "list", "--config", cfg},
		{"--", "mcp", "list", "--config", cfg},
	} {
		var stdout, stderr bytes.Buffer
		code := run(t.Context(), args, &stdout, &stderr)
		if code != exitOK || !strings.Contains(stdout.String(), "only") {
			t.Errorf("elysia %q: exit %d, want 0 and server \"only\" listed\n%s%s", args, code, stdout.String(), stderr.String())
		}
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--config", cfg}, "no command given"},
		{[]string{"--config"}, "flag needs an argument"},
		{[]string{"--json", "query", "x"}, "--json before the command"},
		{[]string{"--config", cfg, "mcp", "list", "a", "b"}, "want at most one SERVER"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(t.Context(), tt.args, &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("elysia %q: exit %d, want 2 and %q\n%s%s", tt.args, code, tt.want, stdout.String(), stderr.String())
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), []string{"--config", cfg, "--help"}, &stdout, &stderr); code != exitOK || !strings.Contains(stdout.String(), "usage: elysia") {
		t.Errorf("elysia --config F --help: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
}

// TestFlagsAnywhereAgainstTodo runs the built binary with --config after
// the server name and before the command, from a folder without mcp.json,
// as the issue reported them.
func TestFlagsAnywhereAgainstTodo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "x.json")
	writeFile(t, cfg, defaultConfig(t))
	elsewhere := t.TempDir()
	for _, args := range [][]string{
		{"mcp", "list", "todo", "--config", cfg},
		{"--config", cfg, "mcp", "list", "todo"},
		{"mcp", "list", "--config=" + cfg, "todo"},
	} {
		code, out, errOut := runCLI(t, elsewhere, nil, args...)
		if code != 0 || !strings.Contains(out, "todo (stdio): 5 tool(s)") {
			t.Errorf("elysia %q: exit %d\n%s%s", args, code, out, errOut)
		}
	}
	code, out, errOut := runCLI(t, elsewhere, nil, "mcp", "call", "todo", "create_todo", `{"title":"flags last"}`, "--config", cfg)
	if code != 0 || !strings.Contains(out, "flags last") {
		t.Errorf("mcp call with --config last: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, elsewhere, nil, "query", "list my todos", "--json", "--config", cfg)
	if code != 0 || !strings.Contains(out, `"type":"completed"`) {
		t.Errorf("query with --json after the text: exit %d\n%s%s", code, out, errOut)
	}
}

// TestAskInputOffersTheDefault checks the terminal prompt: an empty answer
// takes the input's default (what a reload, which never asks, resolves
// too), and a password's default is never printed.
func TestAskInputOffersTheDefault(t *testing.T) {
	tests := []struct {
		name       string
		in         mcpconfig.Input
		typed      string
		want       string
		wantPrompt string
	}{
		{"typed", mcpconfig.Input{ID: "region", Default: "eu"}, "us\n", "us", "region (ELYSIA_INPUT_REGION) [eu]: "},
		{"enter takes the default", mcpconfig.Input{ID: "region", Default: "eu"}, "\n", "eu", "region (ELYSIA_INPUT_REGION) [eu]: "},
		{"no default", mcpconfig.Input{ID: "x", Description: "The X"}, "\r\n", "", "The X (ELYSIA_INPUT_X): "},
		{"password default hidden", mcpconfig.Input{ID: "tok", Password: true, Default: "s3cret-default"}, "", "s3cret-default",
			"tok (ELYSIA_INPUT_TOK) [Enter for the default]: \n"},
		{"password typed", mcpconfig.Input{ID: "tok", Password: true, Default: "s3cret-default"}, "typed-pw", "typed-pw",
			"tok (ELYSIA_INPUT_TOK) [Enter for the default]: \n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			readPassword := func() ([]byte, error) { return []byte(tt.typed), nil }
			got, err := askInput(tt.in, strings.NewReader(tt.typed), &out, readPassword)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("answer = %q, want %q", got, tt.want)
			}
			if out.String() != tt.wantPrompt {
				t.Errorf("prompt = %q, want %q", out.String(), tt.wantPrompt)
			}
		})
	}
}

// TestConfigCheckMasksTheUnresolvedReason: the reason a server cannot
// run may name a path built from a secret (an envFile under ${env:}); the
// CLI shows it masked, as /api/servers does.
func TestConfigCheckMasksTheUnresolvedReason(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "mcp.json")
	writeFile(t, cfg, `{"servers": {"s": {"command": "/bin/true", "envFile": "${env:ELYSIA_TEST_SECRET_DIR}/x.env"}}}`)
	t.Setenv("ELYSIA_TEST_SECRET_DIR", "/s3cret-dir-name")
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), []string{"config", "check", cfg}, &stdout, &stderr); code != exitOK {
		t.Fatalf("config check: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	if out := stdout.String(); strings.Contains(out, "s3cret") || !strings.Contains(out, "cannot run") {
		t.Errorf("config check shows the secret, or not why the server cannot run:\n%s", out)
	}
}

// TestConfigCheckWarnsOfAMissingCommand: a stdio server whose command is
// not on PATH, or not executable, gets a warning naming the server and the
// command; the file is valid, so the exit code stays 0. Before, config
// check said ok and the server failed on its first call.
func TestConfigCheckWarnsOfAMissingCommand(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "not-executable")
	writeFile(t, notExec, "#!/bin/sh\n")
	cfg := filepath.Join(dir, "mcp.json")
	writeFile(t, cfg, fmt.Sprintf(`{"servers": {"ok": {"command": "/bin/true"}, "typo": {"command": "elysia-no-such-command"},
		"plain": {"command": %q}, "off": {"command": "elysia-no-such-command", "enabled": false}}}`, notExec))
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), []string{"config", "check", cfg}, &stdout, &stderr); code != exitOK {
		t.Fatalf("config check: exit %d, want 0 (the file is valid)\n%s%s", code, stdout.String(), stderr.String())
	}
	warnings := stderr.String()
	for _, w := range []string{`warning: server "typo": command "elysia-no-such-command" not found`, `warning: server "plain": command "` + notExec + `"`} {
		if !strings.Contains(warnings, w) {
			t.Errorf("config check's warnings lack %q:\n%s", w, warnings)
		}
	}
	if strings.Contains(warnings, `"ok"`) || strings.Contains(warnings, `"off"`) {
		t.Errorf("config check warns of a server that can run or is disabled:\n%s", warnings)
	}
}
