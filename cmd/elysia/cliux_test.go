package main

import (
	"bytes"
	"context"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/elysia-go/elysia/internal/testenv"
)

// runIn runs a command line in process and returns its exit code, stdout
// and stderr.
func runIn(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// TestHelpExitsZero: asking for help is not a usage error: it prints the
// help on stdout and exits 0, for the command groups too.
func TestHelpExitsZero(t *testing.T) {
	for _, args := range [][]string{
		{"help"}, {"--help"}, {"-h"},
		{"mcp", "--help"}, {"mcp", "-h"}, {"mcp", "help"},
		{"config", "--help"}, {"config", "help"},
		{"help", "mcp"}, {"help", "mcp", "call"},
	} {
		code, out, errOut := runIn(t, args...)
		if code != exitOK || !strings.Contains(out, "usage: elysia") {
			t.Errorf("elysia %q: exit %d, want 0 and the usage on stdout\n%s%s", args, code, out, errOut)
		}
	}
	_, out, _ := runIn(t, "mcp", "--help")
	for _, sub := range []string{"list", "call", "login", "logout"} {
		if !strings.Contains(out, "mcp "+sub) {
			t.Errorf("elysia mcp --help does not list mcp %s:\n%s", sub, out)
		}
	}
}

// TestSubcommandHelp: each command's --help gives its arguments, what it
// does, an example and its flags.
func TestSubcommandHelp(t *testing.T) {
	for _, c := range []struct {
		args     []string
		synopsis string
		flag     string
	}{
		{[]string{"serve"}, "usage: elysia serve [flags]", "-addr"},
		{[]string{"query"}, "usage: elysia query [flags] QUERY", "-json"},
		{[]string{"tree"}, "usage: elysia tree [flags]", "-mode"},
		{[]string{"mcp", "list"}, "usage: elysia mcp list [flags] [SERVER]", "-config"},
		{[]string{"mcp", "call"}, "usage: elysia mcp call [flags] SERVER TOOL ['JSON']", "-config"},
		{[]string{"mcp", "login"}, "usage: elysia mcp login [flags] SERVER", "-browser"},
		{[]string{"mcp", "logout"}, "usage: elysia mcp logout [flags] SERVER", "-config"},
		{[]string{"config", "check"}, "usage: elysia config check [flags] [FILE]", "-config"},
	} {
		code, out, errOut := runIn(t, append(c.args, "--help")...)
		if code != exitOK {
			t.Errorf("elysia %q --help: exit %d\n%s", c.args, code, errOut)
		}
		for _, want := range []string{c.synopsis, "example:", "  elysia " + strings.Join(c.args, " "), "flags:", c.flag} {
			if !strings.Contains(out, want) {
				t.Errorf("elysia %q --help lacks %q:\n%s", c.args, want, out)
			}
		}
		// The line after the synopsis says what the command does.
		if lines := strings.Split(out, "\n"); len(lines) < 3 || strings.TrimSpace(lines[2]) == "" {
			t.Errorf("elysia %q --help has no description:\n%s", c.args, out)
		}
	}
	// A bad flag says where the help is, on stderr.
	code, _, errOut := runIn(t, "mcp", "call", "--nope")
	if code != exitUsage || !strings.Contains(errOut, "elysia mcp call --help") {
		t.Errorf("bad flag: exit %d\n%s", code, errOut)
	}
}

// TestVersion: --version and version print the version and exit 0.
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"version"}, {"-version"}} {
		code, out, errOut := runIn(t, args...)
		if code != exitOK || !strings.HasPrefix(out, "elysia "+version) {
			t.Errorf("elysia %q: exit %d\n%s%s", args, code, out, errOut)
		}
	}
}

// TestUnknownCommandSuggests: a mistyped command or subcommand exits 2
// and names the closest one; "elysia mcp" names every subcommand.
func TestUnknownCommandSuggests(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"qeury", "x"}, `did you mean "query"?`},
		{[]string{"sever"}, `did you mean "serve"?`},
		{[]string{"mcp", "lsit"}, `did you mean "mcp list"?`},
		{[]string{"mcp", "logut", "x"}, `did you mean "mcp logout"?`},
		{[]string{"config", "chek"}, `did you mean "config check"?`},
		{[]string{"mcp"}, "list, call, login, logout, serve, search, add, update, remove or pins"},
		{[]string{"config"}, "check"},
	} {
		code, out, errOut := runIn(t, c.args...)
		if code != exitUsage || !strings.Contains(errOut, c.want) {
			t.Errorf("elysia %q: exit %d, want 2 and %q\n%s%s", c.args, code, c.want, out, errOut)
		}
	}
	if _, _, errOut := runIn(t, "frobnicate"); strings.Contains(errOut, "did you mean") {
		t.Errorf("a command far from every other suggests one:\n%s", errOut)
	}
}

// TestExitCodesAgainstTodo: a sign-in command on a stdio server and a
// mistyped tool are usage errors (2); a query whose tool call failed is a
// tool failure (1).
func TestExitCodesAgainstTodo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "mcp.json"), defaultConfig(t))
	env := []string{"ELYSIA_TOKEN_FILE=" + filepath.Join(dir, "tokens.json")}
	for _, args := range [][]string{{"mcp", "login", "todo", "--browser", "print"}, {"mcp", "logout", "todo"}} {
		code, out, errOut := runCLI(t, dir, env, args...)
		if code != exitUsage || !strings.Contains(errOut, "takes no sign-in") || strings.Contains(out, "signed") {
			t.Errorf("elysia %q on a stdio server: exit %d, want 2 and a refusal\n%s%s", args, code, out, errOut)
		}
	}
	code, out, errOut := runCLI(t, dir, env, "mcp", "call", "todo", "crate_todo", `{"title": "x"}`)
	if code != exitUsage || !strings.Contains(errOut, `did you mean "create_todo"`) {
		t.Errorf("mistyped tool: exit %d, want 2\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, dir, env, "query", "delete todo 999")
	if code != exitFailure || !strings.Contains(out, "no todo with id 999") || !strings.Contains(errOut, "tool call failed") {
		t.Errorf("query whose only tool call failed: exit %d, want 1\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, dir, env, "query", "list my todos")
	if code != exitOK {
		t.Errorf("query whose tool call worked: exit %d, want 0\n%s%s", code, out, errOut)
	}
}

// TestInterruptExits130: Ctrl-C during a call exits 130, the shell's
// convention, saying it was interrupted rather than "context canceled".
func TestInterruptExits130(t *testing.T) {
	dir := everythingConfig(t, "")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, elysiaBin(t), "mcp", "call", "everything", "trigger-long-running-operation", `{"duration": 30, "steps": 30}`)
	cmd.Dir = dir
	cmd.Env = cleanEnv()
	var errb testenv.SyncBuffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("stderr:\n%s", errb.String())
		}
	})
	testenv.WaitFor(t, 30*time.Second, "the first progress line", func() bool {
		return strings.Contains(errb.String(), "1 of 30")
	})
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	code := exitCode(cmd.Wait())
	if code != 130 || strings.Contains(errb.String(), "context canceled") || !strings.Contains(errb.String(), "interrupted") {
		t.Errorf("Ctrl-C: exit %d, want 130 and \"interrupted\"\n%s", code, errb.String())
	}
}

// TestPortInUse: serve on a taken address exits 2 and says what to do.
func TestPortInUse(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "mcp.json"), `{"servers": {}}`)
	code, out, errOut := runCLI(t, dir, nil, "serve", "--addr", ln.Addr().String())
	if code != exitUsage || !strings.Contains(errOut, "in use") || !strings.Contains(errOut, "--addr") {
		t.Errorf("serve on a taken port: exit %d, want 2 and a hint\n%s%s", code, out, errOut)
	}
}
