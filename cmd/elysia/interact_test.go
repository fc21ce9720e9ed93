package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/elysia-go/elysia/internal/testenv"
)

// everythingConfig writes an mcp.json with server-everything over stdio.
func everythingConfig(t *testing.T, extra string) string {
	t.Helper()
	dir := t.TempDir()
	script := testenv.Everything(t)
	writeFile(t, filepath.Join(dir, "mcp.json"), fmt.Sprintf(
		`{"servers": {"everything": {"command": "node", "args": [%q, "stdio"]%s}}}`, script, extra))
	return dir
}

// TestMCPCallProgressAndQuestions: `elysia mcp call` prints a server's
// progress on stderr, answers its questions as ELYSIA_ELICITATION says when
// no terminal is attached, and runs sampling on the configured model only
// when the server may.
func TestMCPCallProgressAndQuestions(t *testing.T) {
	dir := everythingConfig(t, `, "sampling": "auto"`)
	// Reports 300 ms apart: mcpgateway.ProgressInterval coalesces closer ones.
	code, out, errOut := runCLI(t, dir, nil, "mcp", "call", "everything", "trigger-long-running-operation", `{"duration": 0.9, "steps": 3}`)
	if code != 0 || !strings.Contains(out, "completed") {
		t.Fatalf("long-running operation: exit %d\n%s\n%s", code, out, errOut)
	}
	for i := 1; i <= 3; i++ {
		if want := fmt.Sprintf("trigger-long-running-operation on everything: %d of 3", i); !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks the progress line %q:\n%s", want, errOut)
		}
	}

	// Without a terminal the question is declined, saying why.
	code, out, errOut = runCLI(t, dir, nil, "mcp", "call", "everything", "trigger-elicitation-request")
	if code != 0 || !strings.Contains(strings.ToLower(out), "decline") {
		t.Errorf("elicitation without a terminal: exit %d\n%s\n%s", code, out, errOut)
	}
	// The required name has no default, so accepting the defaults cannot
	// answer this form: it is declined rather than sent incomplete.
	code, out, _ = runCLI(t, dir, []string{"ELYSIA_ELICITATION=accept-defaults"}, "mcp", "call", "everything", "trigger-elicitation-request")
	if code != 0 || !strings.Contains(strings.ToLower(out), "decline") {
		t.Errorf("accept-defaults on a form with a required field without default: exit %d\n%s", code, out)
	}

	code, out, errOut = runCLI(t, dir, []string{"ELYSIA_LLM=offline"}, "mcp", "call", "everything", "trigger-sampling-request", `{"prompt": "hello"}`)
	if code != 0 || !strings.Contains(out, "offline-planner") {
		t.Errorf("sampling with the offline planner: exit %d\n%s\n%s", code, out, errOut)
	}
}

// TestMCPCallLeavesNoErrorLog: server-everything asks roots/list just as
// `elysia mcp call` closes the session; the answer that meets the closed
// stdin is expected and must not print an ERROR line.
func TestMCPCallLeavesNoErrorLog(t *testing.T) {
	dir := everythingConfig(t, "")
	for i := range 3 {
		code, out, errOut := runCLI(t, dir, nil, "mcp", "call", "everything", "echo", `{"message": "hi"}`)
		if code != 0 || !strings.Contains(out, "Echo: hi") {
			t.Fatalf("echo: exit %d\n%s\n%s", code, out, errOut)
		}
		if strings.Contains(errOut, "ERROR") {
			t.Errorf("call %d: stderr holds an ERROR line:\n%s", i, errOut)
		}
	}
}
