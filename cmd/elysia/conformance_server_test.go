//go:build unix

package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/elysia-go/elysia/internal/testenv"
)

// serverScenarioTimeout bounds one server scenario end to end; the
// slowest (server-sse-polling) waits at most 10 s for its stream.
const serverScenarioTimeout = 60 * time.Second

// TestConformanceServerScenarios runs every server scenario of the pinned
// official MCP conformance suite against the aggregate endpoint: `elysia
// serve` on loopback with the fixture cmd/conformance-server (every
// test_* tool, resource, template and prompt the scenarios name) as its
// servers (conformanceConfig), exposed unprefixed, and the suite's client
// at /mcp, one scenario at a time. It judges each scenario by the checks
// the suite recorded, like TestConformanceClientScenarios: a failure must
// be listed with its reason in
// testdata/conformance/expected-server-failures.txt, and a listed one that
// passes fails too. docs/CONFORMANCE.md has the table.
func TestConformanceServerScenarios(t *testing.T) {
	serverScenarios(t, func(cfg string) string { return startService(t, serveOptions{Config: cfg}).URL })
}

// serverScenarios runs TestConformanceServerScenarios against the
// endpoint that start serves with the fixture's config cfg, at the base
// URL start returns.
func serverScenarios(t *testing.T, start func(cfg string) string) {
	t.Helper()
	node, cli := testenv.Conformance(t)
	fixture := testenv.ConformanceServer(t)
	root := testenv.RepoRoot()
	const file = "expected-server-failures.txt"
	expected := readExpectedFailures(t, filepath.Join(root, "testdata", "conformance", file))
	scenarios := listScenarios(t, node, cli, "--server")
	checkListed(t, expected, scenarios, file)

	url := start(conformanceConfig(fixture)) + "/mcp"

	for _, scenario := range scenarios {
		t.Run(scenario, func(t *testing.T) {
			res := runServerScenario(t, node, cli, url, scenario)
			checkExpected(t, scenario, res, expected, file)
		})
	}
}

// conformanceConfig is the mcp.json of the endpoint the server scenarios
// run against: the fixture at path twice, each exposed unprefixed. Its
// legacy half (--only legacy: the 2025-11-25 scenarios' tools, whose
// questions are server-initiated requests) is pinned at 2025-11-25; its
// modern half (--only modern: the tools and prompt of the 2026-07-28 and
// Tasks scenarios, which ask with input_required results) at 2026-07-28,
// so that each question reaches the gateway in the era its tool was
// written for. The halves share no name (cmd/conformance-server's
// TestHalvesSplitEverything), so every scenario calls them by the names it
// knows.
//
// log_level debug: the fixture logs at info, and the endpoint filters by
// each session's own logging/setLevel. stream_poll 0.3: the endpoint
// closes a call's stream after 300 ms, within test_reconnection's pause,
// and the client resumes it.
func conformanceConfig(fixture string) string {
	return fmt.Sprintf(`{"expose": {"mode": "tools", "agent": false, "stream_poll": 0.3},
 "servers": {
  "conformance": {"type": "stdio", "command": %[1]q, "args": ["--only", "legacy"], "prefix": "", "log_level": "debug",
   "protocol_version": "2025-11-25"},
  "conformance-2026": {"type": "stdio", "command": %[1]q, "args": ["--only", "modern"], "prefix": "", "log_level": "debug",
   "protocol_version": "2026-07-28"}}}`, fixture)
}

// runServerScenario runs one server scenario against url.
func runServerScenario(t *testing.T, node, cli, url, scenario string) scenarioResult {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), serverScenarioTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, cli, "server", "--url", url, "--scenario", scenario, "--output-dir", dir)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	return judgeScenario(ctx, dir, err, out)
}
