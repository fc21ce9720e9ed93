//go:build unix

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/elysia-go/elysia/internal/testenv"
)

// The official suite's newest release, 0.2.0-alpha.12, is installed beside
// the pinned 0.1.16 as the npm alias @modelcontextprotocol/conformance-next
// (testdata/npm/package.json). It knows 2026-07-28: run without
// --spec-version, each scenario runs at the newest version it was written
// for (2026-07-28 for its own and the extensions', 2025-11-25 for the
// older ones); with --spec-version V, only the scenarios V has, all at V.

// nextSpec is one way of running the newer suite: at its default, or at
// one spec version, with the expected failures of each direction.
type nextSpec struct {
	name    string // the subtest
	version string // --spec-version; "" is the suite's default
	server  string // expected server failures, under testdata/conformance
	client  string // expected client failures; "" skips the client direction
}

// nextSpecs are the runs of the newer suite in `make test`. The client
// direction skips 2026-07-28: the default run already has every client
// scenario written for it, and each client scenario costs a CLI run; the
// server direction is cheap (one runner for all), and at 2026-07-28 it
// serves the older scenarios statelessly.
var nextSpecs = []nextSpec{
	{"default", "", "expected-server-failures-0.2.txt", "expected-failures-0.2.txt"},
	{"2025-11-25", "2025-11-25", "expected-server-failures-0.2-2025-11-25.txt", "expected-failures-0.2-2025-11-25.txt"},
	{"2026-07-28", "2026-07-28", "expected-server-failures-0.2-2026-07-28.txt", ""},
}

// nextSuiteTimeout bounds one run of every server scenario of one spec in
// one runner: the runner gives each scenario 30 s.
const nextSuiteTimeout = 10 * time.Minute

// conformanceNext returns Node and the entry script of the newer suite.
func conformanceNext(t *testing.T) (node, cli string) {
	t.Helper()
	node, old := testenv.Conformance(t) // .../@modelcontextprotocol/conformance/dist/index.js
	cli = filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(old))), "conformance-next", "dist", "index.js")
	if _, err := os.Stat(cli); err != nil {
		testenv.Missing(t, "the MCP conformance suite 0.2.0-alpha.12 is not installed (run: npm ci --prefix testdata/npm)")
	}
	return node, cli
}

// specArgs is the --spec-version flag of s, if any.
func (s nextSpec) specArgs() []string {
	if s.version == "" {
		return nil
	}
	return []string{"--spec-version", s.version}
}

// TestConformanceNextServerScenarios runs every server scenario of the
// newer suite against the aggregate endpoint, as
// TestConformanceServerScenarios does with the pinned one: the fixture
// cmd/conformance-server behind /mcp of `elysia serve`, once at the
// suite's default and once at each spec version of nextSpecs. Each
// scenario is a subtest judged by its own checks.json; a failure must be
// listed in the spec's expected-failures file, and a listed one that
// passes fails too. docs/CONFORMANCE.md has the tables.
//
// Each spec gets a service of its own: a run's calls left waiting for
// answers must not decide the next run's results.
func TestConformanceNextServerScenarios(t *testing.T) {
	for _, spec := range nextSpecs {
		t.Run(spec.name, func(t *testing.T) {
			url := startConformanceEndpoint(t, func(cfg string) string { return startService(t, serveOptions{Config: cfg}).URL })
			nextServerScenarios(t, url, spec)
		})
	}
}

// startConformanceEndpoint starts the endpoint with the fixture as start
// does (see serverScenarios) and returns its /mcp URL.
func startConformanceEndpoint(t *testing.T, start func(cfg string) string) string {
	t.Helper()
	return start(conformanceConfig(testenv.ConformanceServer(t))) + "/mcp"
}

// nextServerScenarios runs the server scenarios of spec against url in
// one runner, then judges each.
func nextServerScenarios(t *testing.T, url string, spec nextSpec) {
	t.Helper()
	node, cli := conformanceNext(t)
	expected := readExpectedFailures(t, filepath.Join(testenv.RepoRoot(), "testdata", "conformance", spec.server))
	scenarios := listScenarios(t, node, cli, append([]string{"--server"}, spec.specArgs()...)...)
	checkListed(t, expected, scenarios, spec.server)

	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), nextSuiteTimeout)
	defer cancel()
	args := append([]string{cli, "server", "--url", url, "--suite", "all", "--output-dir", dir}, spec.specArgs()...)
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	out, _ := cmd.CombinedOutput() // its exit says whether any failed; each is judged below
	if ctx.Err() != nil {
		t.Fatalf("the suite did not finish within %v:\n%s", nextSuiteTimeout, ansiColor.ReplaceAllString(string(out), ""))
	}
	dirs := scenarioDirs(t, dir, "server-")
	for _, scenario := range scenarios {
		t.Run(scenario, func(t *testing.T) {
			res := scenarioResult{summary: "the runner did not run it", output: ansiColor.ReplaceAllString(string(out), "")}
			if d, ok := dirs[scenario]; ok {
				res = judgeScenario(ctx, d, nil, out)
			}
			checkExpected(t, scenario, res, expected, spec.server)
		})
	}
}

// resultStamp is the time the runner appends to a result folder's name.
var resultStamp = regexp.MustCompile(`-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z$`)

// scenarioDirs maps each scenario the runner ran into dir to its result
// folder, named PREFIX<scenario>-<time>.
func scenarioDirs(t *testing.T, dir, prefix string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	dirs := map[string]string{}
	for _, e := range entries {
		name, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || !e.IsDir() || !resultStamp.MatchString(name) {
			continue
		}
		dirs[resultStamp.ReplaceAllString(name, "")] = filepath.Join(dir, e.Name())
	}
	return dirs
}

// TestConformanceNextClientScenarios runs every client scenario of the
// newer suite against the product's client through
// scripts/conformance-client.sh, one at a time, as
// TestConformanceClientScenarios does with the pinned suite, at the
// suite's default and at the spec versions of nextSpecs that name a client
// file.
func TestConformanceNextClientScenarios(t *testing.T) {
	node, cli := conformanceNext(t)
	bin := elysiaBin(t)
	driver := filepath.Join(testenv.RepoRoot(), "scripts", "conformance-client.sh")
	for _, spec := range nextSpecs {
		if spec.client == "" {
			continue
		}
		t.Run(spec.name, func(t *testing.T) {
			expected := readExpectedFailures(t, filepath.Join(testenv.RepoRoot(), "testdata", "conformance", spec.client))
			scenarios := listScenarios(t, node, cli, append([]string{"--client"}, spec.specArgs()...)...)
			checkListed(t, expected, scenarios, spec.client)
			for _, scenario := range scenarios {
				t.Run(scenario, func(t *testing.T) {
					res := runScenario(t, node, cli, driver, bin, scenario, spec.specArgs()...)
					checkExpected(t, scenario, res, expected, spec.client)
				})
			}
		})
	}
}

// TestConformanceNextDriverMapsEveryScenario checks that the client driver
// knows every client scenario of both suites: an unmapped one exits 2
// before the suite can judge it.
func TestConformanceNextDriverMapsEveryScenario(t *testing.T) {
	node, old := testenv.Conformance(t)
	_, cli := conformanceNext(t)
	script, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "scripts", "conformance-client.sh"))
	if err != nil {
		t.Fatal(err)
	}
	mapped := driverScenarios(string(script))
	for _, c := range []string{old, cli} {
		for _, s := range listScenarios(t, node, c, "--client") {
			if !slices.ContainsFunc(mapped, func(p string) bool { ok, _ := filepath.Match(p, s); return ok }) {
				t.Errorf("scripts/conformance-client.sh maps no case to the client scenario %s (%s)", s, c)
			}
		}
	}
}

// driverCase matches a case pattern line of the driver's scenario switch.
var driverCase = regexp.MustCompile(`(?m)^([a-z0-9*/_ |.-]+)\)\s*$`)

// driverScenarios are the patterns of the driver's `case $scenario` arms
// (shell globs), the catch-all excepted.
func driverScenarios(script string) []string {
	_, body, _ := strings.Cut(script, "case $scenario in")
	var pats []string
	for _, m := range driverCase.FindAllStringSubmatch(body, -1) {
		for p := range strings.SplitSeq(m[1], "|") {
			if p = strings.TrimSpace(p); p != "*" && p != "" {
				pats = append(pats, p)
			}
		}
	}
	return pats
}
