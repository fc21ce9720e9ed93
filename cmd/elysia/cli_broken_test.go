package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestCLIBrokenServer: a server whose command does not exist is listed as
// failed, with why, before anything ran; and a call of it fails once, in
// one "elysia:" line, not again in a log line above it.
func TestCLIBrokenServer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir+"/mcp.json", `{"servers": {"broken": {"type": "stdio", "command": "./no-such-server"}}}`)
	code, out, errOut := runCLI(t, dir, nil, "mcp", "list")
	if code != 0 || !strings.Contains(out, "STATE") || !strings.Contains(out, "failed") || !strings.Contains(out, "no-such-server\" not found") {
		t.Errorf("mcp list = %d\n%s%s\nwant the broken server failed, saying its command is not found", code, out, errOut)
	}
	code, out, errOut = runCLI(t, dir, nil, "tree")
	if code != 0 || !strings.Contains(out, "🔧 mcp_broken") || !regexp.MustCompile(`(?m)^broken +failed +.*no-such-server" not found`).MatchString(out) {
		t.Errorf("tree = %d\n%s%s\nwant the tree, then the broken server failed, saying why", code, out, errOut)
	}
	code, out, errOut = runCLI(t, dir, nil, "mcp", "call", "broken", "any_tool")
	if code != 1 || strings.Count(errOut, "not found") != 1 || !strings.HasPrefix(errOut, "elysia: ") {
		t.Errorf("mcp call of a broken server = %d\nstdout: %s\nstderr: %s\nwant exit 1 and its failure once, as an elysia: line", code, out, errOut)
	}
}
