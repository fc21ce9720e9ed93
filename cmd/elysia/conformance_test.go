//go:build unix

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/elysia-go/elysia/internal/testenv"
)

// scenarioTimeout bounds one conformance scenario end to end. The runner
// gives the driver 30 s (--timeout) and the driver's calls end after 20 s
// (call_timeout in its mcp.json); this is the backstop for a hung runner.
const scenarioTimeout = 90 * time.Second

// ansiColor matches the colour codes the runner writes even to a pipe.
var ansiColor = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// TestConformanceClientScenarios runs every client scenario of the pinned
// official MCP conformance suite against the product's own client: the
// suite's runner starts a mock server per scenario and runs
// scripts/conformance-client.sh, which drives it with `elysia mcp list` and
// `elysia mcp call`. A scenario that fails must be listed, with its reason,
// in testdata/conformance/expected-failures.txt; a listed one that passes is
// reported too, so the list stays honest. docs/CONFORMANCE.md has the table.
func TestConformanceClientScenarios(t *testing.T) {
	node, cli := testenv.Conformance(t)
	bin := elysiaBin(t)
	root := testenv.RepoRoot()
	driver := filepath.Join(root, "scripts", "conformance-client.sh")
	if strings.ContainsAny(driver, " \t") {
		// The runner splits --command on spaces.
		t.Fatalf("the conformance runner cannot run a driver whose path has spaces: %s", driver)
	}
	expected := readExpectedFailures(t, filepath.Join(root, "testdata", "conformance", "expected-failures.txt"))
	scenarios := listClientScenarios(t, node, cli)

	checkListed(t, expected, scenarios, "expected-failures.txt")

	// One at a time: scenarios run in parallel skew the suite's timing
	// checks (sse-retry) on a two-core machine.
	for _, scenario := range scenarios {
		t.Run(scenario, func(t *testing.T) {
			res := runScenario(t, node, cli, driver, bin, scenario)
			checkExpected(t, scenario, res, expected, "expected-failures.txt")
		})
	}
}

// checkListed fails t for every scenario the expected-failures file
// (under testdata/conformance) lists that the pinned suite does not have.
func checkListed(t *testing.T, expected map[string]string, scenarios []string, file string) {
	t.Helper()
	known := map[string]bool{}
	for _, s := range scenarios {
		known[s] = true
	}
	for s := range expected {
		if !known[s] {
			t.Errorf("%s lists %q, which is not a scenario of this kind in the pinned suite", file, s)
		}
	}
}

// checkExpected fails t when scenario failed and the expected-failures
// file (under testdata/conformance) does not list it, or passed and it
// does: the list stays honest both ways. A reason that starts with
// "flaky: " names a scenario that passes or fails by timing (the reason
// says why): either outcome is logged, neither fails.
func checkExpected(t *testing.T, scenario string, res scenarioResult, expected map[string]string, file string) {
	t.Helper()
	reason, listed := expected[scenario]
	switch {
	case listed && strings.HasPrefix(reason, "flaky: "):
		t.Logf("%s (listed as %s): passed=%t %s", scenario, reason, res.passed, res.summary)
	case res.passed && listed:
		t.Errorf("%s passes now; delete its line from testdata/conformance/%s (it said: %s)", scenario, file, reason)
	case !res.passed && !listed:
		t.Errorf("%s fails: %s\n%s", scenario, res.summary, res.output)
	case !res.passed:
		t.Logf("expected failure (%s): %s", reason, res.summary)
	}
}

// scenarioResult is the outcome of one scenario as the suite recorded it.
type scenarioResult struct {
	passed  bool
	summary string // why it failed, from the suite's checks
	output  string // the runner's output, for a failure nobody expected
}

// conformanceCheck is one entry of the runner's checks.json.
type conformanceCheck struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	Description  string `json:"description"`
	Status       string `json:"status"` // SUCCESS, FAILURE, WARNING, INFO, ...
	ErrorMessage string `json:"errorMessage"`
}

// runScenario runs one client scenario and judges it by the checks the
// mock server recorded. It is stricter than the runner's exit code: a
// scenario with no SUCCESS check did not exercise anything (the runner
// reports "Passed: 0/0" as a pass), so it counts as a failure.
// extra are more flags for the runner (--spec-version).
func runScenario(t *testing.T, node, cli, driver, bin, scenario string, extra ...string) scenarioResult {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), scenarioTimeout)
	defer cancel()
	args := append([]string{cli, "client",
		"--command", driver, "--scenario", scenario, "--timeout", "30000", "--output-dir", dir}, extra...)
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "ELYSIA_BIN="+bin)
	// Own process group, so a timeout also ends the driver and the CLI
	// under it: the runner's own timeout kills only the shell.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	return judgeScenario(ctx, dir, err, out)
}

// judgeScenario judges a scenario the runner ran under ctx, with its
// output dir, exit error and output, by the checks it recorded. It is
// stricter than the runner's exit code: a check that warned counts as a
// failure, and a scenario with no SUCCESS check did not exercise anything
// (the runner reports "Passed: 0/0" as a pass), so it counts as one too.
func judgeScenario(ctx context.Context, dir string, err error, out []byte) scenarioResult {
	output := ansiColor.ReplaceAllString(string(out), "")
	if ctx.Err() != nil {
		return scenarioResult{summary: "no result in time", output: output}
	}

	checks, readErr := readChecks(dir)
	if readErr != nil {
		return scenarioResult{summary: fmt.Sprintf("runner: %v; checks: %v", err, readErr), output: output}
	}
	var failed []string
	successes := 0
	for _, c := range checks {
		switch c.Status {
		case "SUCCESS":
			successes++
		case "FAILURE", "WARNING":
			msg := c.Name + " " + strings.ToLower(c.Status)
			if c.ErrorMessage != "" {
				msg += ": " + c.ErrorMessage
			}
			failed = append(failed, msg)
		}
	}
	switch {
	case len(failed) > 0:
		return scenarioResult{summary: strings.Join(failed, "; "), output: output}
	case err != nil:
		return scenarioResult{summary: fmt.Sprintf("runner: %v", err), output: output}
	case successes == 0:
		return scenarioResult{summary: "no check recorded: the scenario was not exercised", output: output}
	}
	return scenarioResult{passed: true}
}

// readChecks reads the checks.json the runner wrote under dir (in a
// subfolder named after the scenario and the time).
func readChecks(dir string) ([]conformanceCheck, error) {
	var file string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "checks.json" {
			file = path
			return filepath.SkipAll
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if file == "" {
		return nil, fmt.Errorf("no checks.json under %s", dir)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var checks []conformanceCheck
	if err := json.Unmarshal(data, &checks); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return checks, nil
}

// listClientScenarios asks the suite for its client scenarios.
func listClientScenarios(t *testing.T, node, cli string) []string {
	t.Helper()
	return listScenarios(t, node, cli, "--client")
}

// listScenarios asks the suite for its scenarios of a kind: "--client" or
// "--server", and any more flags of `list` (--spec-version).
func listScenarios(t *testing.T, node, cli string, flags ...string) []string {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), node, append([]string{cli, "list"}, flags...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("conformance list %s: %v\n%s", strings.Join(flags, " "), err, out)
	}
	// Lines look like "  - sse-retry [2025-11-25]".
	var names []string
	for line := range strings.Lines(string(out)) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "- "); ok {
			name, _, _ := strings.Cut(rest, " ")
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		t.Fatalf("conformance list %s printed no scenario:\n%s", strings.Join(flags, " "), out)
	}
	return names
}

// readExpectedFailures reads "SCENARIO: reason" lines; # starts a comment.
func readExpectedFailures(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }() // read-only
	expected := map[string]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, reason, ok := strings.Cut(line, ": ")
		if !ok || strings.TrimSpace(reason) == "" {
			t.Fatalf("%s:%d: want \"SCENARIO: reason\", got %q", path, n, line)
		}
		if _, dup := expected[name]; dup {
			t.Fatalf("%s:%d: %s listed twice", path, n, name)
		}
		expected[name] = reason
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return expected
}
