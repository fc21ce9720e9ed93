package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/elysia-go/elysia/internal/testenv"
	"github.com/elysia-go/elysia/llm"
	"github.com/elysia-go/elysia/web"
)

// BenchmarkConcurrentQueries puts the whole service under query load: the
// real `elysia serve` binary (see elysiaBin) with a real SQLite store, the
// real todo-mcp over stdio and an OpenAI-compatible scripted model served
// by the test process. Each sub-benchmark starts a service of its own,
// then runs clients clients that each send POST /query/load/<conversation>
// ("add a todo") over and over, reading the event stream to its completed
// envelope, until ELYSIA_LOAD_DURATION (default 30s) has passed; queries
// running at the deadline finish and count. conv=long: every client reuses
// one conversation for all its queries, so conversations grow for the
// whole run, and before it starts each holds ELYSIA_LOAD_LONG_TURNS
// (default 50) queries sent untimed; conv=new: every query starts a new
// conversation.
//
// The service runs in a process of its own so that its CPU time can be
// told from the harness's (the scripted model and the load client, in the
// test process): Go cannot attribute CPU time to goroutines. With
// ELYSIA_LOAD_SERVICE=inprocess the service is assembled in the test
// process instead, as `elysia serve` does it (newApp, app.deps, web.New)
// behind a loopback httptest.Server, the way this benchmark measured before
// 2026-11-24; then the test's -cpuprofile covers the service, and the
// goroutine check covers the service as well as the harness.
// ELYSIA_LOAD_CPUPROFILE=FILE has each sub-benchmark's service process
// profile its CPU over the timed run (through serve --pprof-addr) into
// FILE with the sub-benchmark's name inserted before the extension: the
// whole process, every goroutine, as the service-cpu-ms/query figure
// counts it.
// ELYSIA_LOAD_MODEL_DELAY (a Go duration, default 0) has the scripted
// model take that long to answer each call, as a real model would.
//
// Each benchmark iteration runs the whole load once, on the same service
// (conversations go on growing), so run it with -benchtime 1x; ns/op is
// then the length of one load run, and the figures to read are the
// reported metrics: queries/s, latency percentiles (p50-ms, p95-ms,
// p99-ms, max-ms), cpu-ms/query (user+system CPU time of the service and
// the harness over the run, divided by the completed queries; todo-mcp is
// the service's child and not counted), service-cpu-ms/query and
// harness-cpu-ms/query (its two parts: the service process's, from
// /proc/<pid>/stat, and the test process's, from getrusage; only when the
// service runs in its own process), <name>-cpu-ms/query for each stdio
// MCP server the service runs (todo-mcp-cpu-ms/query: what an operator
// pays beside the service, its children found through /proc),
// errors (any non-200, error envelope or
// stream without completed; must be 0) and goroutines (left in the test
// process after the service is closed, compared with before it was
// started; should be 0). A service process must exit 0 when stopped.
//
// Afterwards the todo server must hold exactly one todo per completed
// query: the scripted model lists the todo tools once per conversation,
// creates one todo per query, then answers. And every completed query's
// answer must be saved (unsaved, must be 0): each conversation is read
// back through GET /conversations, and each query's text (unique in the
// run) must be in its history with the answer after it.
//
// ELYSIA_LOAD_REPLICAS=N (with ELYSIA_LOAD_DATABASE_URL a postgres:// URL)
// runs N `elysia serve` processes on that database, each with its own
// todo server, as behind a load balancer without sticky sessions: a
// client's queries take turns over the replicas, so each query of a long
// conversation lands on another replica than the one before, and its
// answer is read back through yet another (the next one).
//
//	make build && ELYSIA_BIN=$PWD/bin/elysia ELYSIA_LOAD_DURATION=5s go test -run '^$' -bench BenchmarkConcurrentQueries -benchtime 1x ./cmd/elysia/
func BenchmarkConcurrentQueries(b *testing.B) {
	for _, clients := range []int{8, 200} {
		for _, long := range []bool{true, false} {
			name := fmt.Sprintf("clients=%d/conv=new", clients)
			if long {
				name = fmt.Sprintf("clients=%d/conv=long", clients)
			}
			b.Run(name, func(b *testing.B) { benchmarkLoad(b, clients, long) })
		}
	}
}

// benchmarkLoad is one sub-benchmark of BenchmarkConcurrentQueries.
func benchmarkLoad(b *testing.B, clients int, long bool) {
	b.Helper()
	dur := loadDuration(b)
	inProcess := loadInProcess(b)
	baseline := runtime.NumGoroutine()
	var svc *loadService
	if inProcess {
		svc = loadNewService(b, clients)
	} else {
		svc = loadStartService(b, clients)
	}
	closed := false
	defer func() {
		if !closed {
			svc.close(b)
		}
	}()
	svc.warmUp(b)
	prelude := 0
	if long {
		prelude = loadPrelude(b, svc, clients, loadLongTurns(b))
	}

	calls0 := svc.model.calls.Load()
	peak := loadWatchGoroutines()
	var st loadStats
	b.ResetTimer()
	for range b.N {
		st.merge(loadRun(b, svc, clients, long, dur))
	}
	b.StopTimer()
	peakGoroutines := peak()
	idleGoroutines := runtime.NumGoroutine()
	idleStacks := loadGoroutineSummary(4)
	todos, titles := svc.storedTodos(b)
	dbBytes := svc.storeBytes(b)
	warnings := svc.logLines()
	closed = true
	svc.close(b)
	for _, p := range svc.procs() {
		if code := p.cmd.ProcessState.ExitCode(); code != 0 {
			b.Errorf("elysia serve exited %d when stopped:\n%s", code, p.Output())
		}
	}
	left, stacks := loadSettleGoroutines(baseline, 15*time.Second)

	lat := st.latencies
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	perQuery := func(d time.Duration) time.Duration { return d / time.Duration(max(st.completed, 1)) }
	cpu := st.harnessCPU + st.serviceCPU
	b.ReportMetric(float64(st.completed)/st.elapsed.Seconds(), "queries/s")
	b.ReportMetric(ms(loadPercentile(lat, 0.50)), "p50-ms")
	b.ReportMetric(ms(loadPercentile(lat, 0.95)), "p95-ms")
	b.ReportMetric(ms(loadPercentile(lat, 0.99)), "p99-ms")
	b.ReportMetric(ms(loadPercentile(lat, 1)), "max-ms")
	b.ReportMetric(ms(perQuery(cpu)), "cpu-ms/query")
	if !inProcess {
		b.ReportMetric(ms(perQuery(st.serviceCPU)), "service-cpu-ms/query")
		b.ReportMetric(ms(perQuery(st.harnessCPU)), "harness-cpu-ms/query")
		for name, d := range st.childCPU {
			b.ReportMetric(ms(perQuery(d)), name+"-cpu-ms/query")
		}
	}
	b.ReportMetric(float64(dbBytes)/float64(max(st.completed, 1)), "db-B/query")
	b.ReportMetric(float64(st.errors), "errors")
	b.ReportMetric(float64(st.unsaved), "unsaved")
	b.ReportMetric(float64(left), "goroutines")

	// Benchmark logs are cut to their first lines when the benchmark
	// passes: the summary comes first.
	// The metrics line is not printed when the benchmark fails: the
	// summary repeats it.
	where := fmt.Sprintf("in %d process(es) (%v of the CPU/query)", max(len(svc.procs()), 1), perQuery(st.serviceCPU).Round(time.Microsecond))
	if inProcess {
		where = "in the test process"
	}
	b.Logf("%d clients (%s conversations), service %s, for %v: %d queries completed (%.1f/s; p50 %v, p95 %v, p99 %v, max %v; %v CPU/query), %d errors, %d self-healing errors; %d todos stored (%d titles); %.2f model calls/query (%d bad model requests); database %d bytes",
		clients, map[bool]string{true: "long", false: "new"}[long], where, st.elapsed.Round(time.Millisecond), st.completed, float64(st.completed)/st.elapsed.Seconds(),
		loadPercentile(lat, 0.50).Round(time.Millisecond), loadPercentile(lat, 0.95).Round(time.Millisecond),
		loadPercentile(lat, 0.99).Round(time.Millisecond), loadPercentile(lat, 1).Round(time.Millisecond),
		perQuery(cpu).Round(time.Microsecond),
		st.errors, st.heals, todos, titles,
		float64(svc.model.calls.Load()-calls0)/float64(max(st.completed, 1)), svc.model.bad.Load(), dbBytes)
	b.Logf("goroutines: %d before, peak %d under load, %d idle after the load, %d left after closing",
		baseline, peakGoroutines, idleGoroutines, baseline+left)
	for _, e := range st.errorKinds() {
		b.Logf("error: %s", e)
	}
	if st.errors > 0 {
		b.Errorf("%d of %d queries failed", st.errors, st.errors+st.completed)
	}
	if st.unsaved > 0 {
		b.Errorf("%d of %d completed queries' answers were not saved, e.g. %q", st.unsaved, st.completed, st.unsavedExamples)
	}
	if todos != prelude+st.completed || titles != todos {
		b.Errorf("the todo server holds %d todos (%d distinct titles) after %d completed queries and %d before the run (the model asked for %d creates)",
			todos, titles, st.completed, prelude, svc.model.creates.Load())
	}
	if left > 0 {
		b.Errorf("%d goroutines more than before the service was assembled, 15 s after closing it:\n%s", left, stacks)
	}
	for i, l := range warnings {
		if i == 10 {
			b.Logf("... %d more service log lines", len(warnings)-i)
			break
		}
		b.Logf("service log: %s", l)
	}
	b.Logf("goroutines idle after the load, by where they wait:\n%s", idleStacks)
}

const (
	loadUser            = "load"
	loadDefaultDuration = 30 * time.Second
	// loadQueryTimeout bounds one query; a query this slow is an error.
	loadQueryTimeout = 2 * time.Minute
)

// loadDefaultLongTurns is how many queries each client's conversation
// holds before a conv=long run starts (ELYSIA_LOAD_LONG_TURNS).
const loadDefaultLongTurns = 50

// loadLongTurns reads ELYSIA_LOAD_LONG_TURNS (a count), 50 if unset.
func loadLongTurns(b *testing.B) int {
	b.Helper()
	v := os.Getenv("ELYSIA_LOAD_LONG_TURNS")
	if v == "" {
		return loadDefaultLongTurns
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		b.Fatalf("ELYSIA_LOAD_LONG_TURNS=%q: want a count such as 50", v)
	}
	return n
}

// loadPrelude gives each client's conversation (c0, c1, ...) turns
// queries before the timed run, clients at a time, as conv=long runs go
// on with: the run then measures queries on conversations that already
// hold turns saved turns, not the first queries of new ones. Any failure
// ends the benchmark. It returns the queries completed.
func loadPrelude(b *testing.B, svc *loadService, clients, turns int) int {
	b.Helper()
	urls := svc.urls()
	errs := make([]error, clients)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			for n := range turns {
				url := fmt.Sprintf("%s/query/%s/c%d", urls[(i+n)%len(urls)], loadUser, i)
				if _, _, err := loadQuery(svc.client, url, fmt.Sprintf("prelude %d-%d", i, n)); err != nil {
					errs[i] = fmt.Errorf("client %d, query %d: %w", i, n, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		b.Fatalf("the %d queries per conversation before the run: %v", turns, err)
	}
	return clients * turns
}

// loadDatabase returns the service's database: ELYSIA_LOAD_DATABASE_URL
// when set (a postgres:// URL; use a fresh schema per run, as db-B/query
// is then 0), else a SQLite file in dir.
func loadDatabase(dir string) string {
	if u := os.Getenv("ELYSIA_LOAD_DATABASE_URL"); u != "" {
		return u
	}
	return filepath.Join(dir, "elysia.db")
}

// loadDuration reads ELYSIA_LOAD_DURATION (a Go duration), 30s if unset.
func loadDuration(b *testing.B) time.Duration {
	b.Helper()
	v := os.Getenv("ELYSIA_LOAD_DURATION")
	if v == "" {
		return loadDefaultDuration
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		b.Fatalf("ELYSIA_LOAD_DURATION=%q: want a positive duration such as 5s", v)
	}
	return d
}

// loadService is the service under load, its scripted model and the
// client the load is sent with. The service is either an `elysia serve`
// process (proc) or assembled in the test process (app, srv).
type loadService struct {
	model  *loadModel
	url    string
	client *http.Client
	todoDB string // the todo server's SQLite file
	db     string // the service's SQLite file

	// proc is the service's process; nil when it runs in the test process.
	proc *serviceProc
	// pprof is the address of proc's profiles (serve --pprof-addr) and
	// profile the file its CPU profile of each load run goes to, with
	// ELYSIA_LOAD_CPUPROFILE; both "" without it.
	pprof, profile string
	// replicas are the service's processes with ELYSIA_LOAD_REPLICAS > 1,
	// proc first, each with its own todo server (todoDBs); see
	// loadreplicas_test.go.
	replicas []*serviceProc
	todoDBs  []string

	// In the test process: the service, its listener, the client of its
	// model requests and its log.
	app         *app
	srv         *httptest.Server
	modelClient *http.Client
	logs        *loadLog
}

// loadInProcess reads ELYSIA_LOAD_SERVICE: "process" (or unset) runs the
// service as its own process, "inprocess" in the test process.
func loadInProcess(b *testing.B) bool {
	b.Helper()
	switch v := os.Getenv("ELYSIA_LOAD_SERVICE"); v {
	case "", "process":
		return false
	case "inprocess":
		return true
	default:
		b.Fatalf("ELYSIA_LOAD_SERVICE=%q: want process or inprocess", v)
		return false
	}
}

// loadStartService starts `elysia serve` on a loopback port, with its model
// pointed at a scripted model server in the test process, and waits until
// it is ready. The process is stopped by close, or at the latest when b
// ends (startService kills it if SIGINT does not end it in 15 s).
func loadStartService(b *testing.B, clients int) *loadService {
	b.Helper()
	dir := b.TempDir()
	s := &loadService{model: loadNewModel(b), todoDB: filepath.Join(dir, "todos.db"), db: loadDatabase(dir)}
	b.Cleanup(s.model.srv.Close) // after the service's own cleanup, which was registered later
	args := []string{"--db", s.db, "--log-level", "warn"}
	if p := os.Getenv("ELYSIA_LOAD_CPUPROFILE"); p != "" {
		ext := filepath.Ext(p)
		name := strings.ReplaceAll(strings.TrimPrefix(b.Name(), "BenchmarkConcurrentQueries/"), "/", "-")
		s.profile = strings.TrimSuffix(p, ext) + "." + name + ext
		s.pprof = fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(b))
		args = append(args, "--pprof-addr", s.pprof)
	}
	s.startReplicas(b, dir, args)
	s.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * clients, DisableCompression: true}}
	return s
}

// loadNewService assembles the service with newApp, as `elysia serve` does,
// with the model pointed at a scripted model server and its own connection
// pool sized for the load.
func loadNewService(b *testing.B, clients int) *loadService {
	b.Helper()
	todoBin := testenv.TodoMCP(b)
	dir := b.TempDir()
	cfg := filepath.Join(dir, "mcp.json")
	todoDB := filepath.Join(dir, "todos.db")
	conf := fmt.Sprintf(`{"servers": {"todo": {"type": "stdio", "command": %q, "env": {"TODO_DB": %q}, "description": "A todo list."}}}`,
		todoBin, todoDB)
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		b.Fatal(err)
	}

	s := &loadService{model: loadNewModel(b), logs: &loadLog{}, todoDB: todoDB, db: loadDatabase(dir)}
	b.Cleanup(s.model.srv.Close) // idempotent; close closes it first
	env := map[string]string{
		llm.EnvProvider:      string(llm.ProviderOpenAI),
		llm.EnvOpenAIBaseURL: s.model.srv.URL + "/v1",
		llm.EnvOpenAIKey:     "test",
		llm.EnvModel:         "scripted",
	}
	for k, v := range env {
		b.Setenv(k, v) // newApp reads the model from the process environment
	}
	logger := slog.New(slog.NewJSONHandler(s.logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	a, err := newApp(context.Background(), appConfig{configPath: cfg, dsn: s.db, logger: logger})
	if err != nil {
		s.model.srv.Close()
		b.Fatal(err)
	}
	s.app = a
	// newApp's model uses the default client, which keeps 2 idle
	// connections per host: under this load it would open and close a
	// connection per call. Swap in the same model with a pool.
	s.modelClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4 * clients}}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	model, info, err := llm.FromEnv(context.Background(), lookup, &llm.Options{HTTPClient: s.modelClient})
	if err != nil {
		s.close(b)
		b.Fatal(err)
	}
	a.model, a.info = model, info

	srv := web.New(a.deps(), &web.Options{Logger: logger, Registry: prometheus.NewRegistry(), Ready: a.ready, Routes: a.routes(a.streams(nil, nil))})
	s.srv = httptest.NewServer(srv.Handler())
	s.url = s.srv.URL
	s.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * clients, DisableCompression: true}}
	return s
}

// close stops the load client, the service (its gateway stops todo-mcp)
// and the model server, in that order. A service process that does not
// stop within 15 s of SIGINT is killed, and tb fails.
func (s *loadService) close(tb testing.TB) {
	tb.Helper()
	if s.client != nil {
		s.client.CloseIdleConnections()
	}
	for _, p := range s.procs() {
		p.Stop(tb)
	}
	if s.srv != nil {
		s.srv.Close()
	}
	if s.app != nil {
		s.app.close()
	}
	if s.modelClient != nil {
		s.modelClient.CloseIdleConnections()
	}
	s.model.srv.Close()
}

// logLines returns the service's warnings and errors, one JSON line each.
func (s *loadService) logLines() []string {
	if s.proc == nil {
		return s.logs.lines()
	}
	var out []string
	for _, p := range s.procs() {
		for l := range strings.Lines(p.Output()) {
			if strings.HasPrefix(l, "{") {
				out = append(out, strings.TrimRight(l, "\n"))
			}
		}
	}
	return out
}

// cpuTime is the user plus system CPU time of the service's processes
// (procCPUTime), or 0 when the service runs in the test process.
func (s *loadService) cpuTime(b *testing.B) time.Duration {
	b.Helper()
	var sum time.Duration
	for _, p := range s.procs() {
		sum += procCPUTime(b, p.cmd.Process.Pid)
	}
	return sum
}

// childCPUTime is the user plus system CPU time of the service processes'
// children that run now (the stdio MCP servers, such as todo-mcp), by
// command name. A child that exited is not counted: the load keeps its
// servers running, so one that exits is a failure the run shows anyway.
func (s *loadService) childCPUTime(b *testing.B) map[string]time.Duration {
	b.Helper()
	out := map[string]time.Duration{}
	for _, p := range s.procs() {
		for _, pid := range procChildren(p.cmd.Process.Pid) {
			if raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil {
				out[strings.TrimSpace(string(raw))] += procCPUTime(b, pid)
			}
		}
	}
	return out
}

// procChildren returns the pids of the children of process pid: the
// processes whose parent (field 4 of /proc/<pid>/stat) it is.
func procChildren(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue // not a process
		}
		raw, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // it ended
		}
		_, rest, ok := bytes.Cut(raw, []byte(") "))
		if f := strings.Fields(string(rest)); ok && len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}

// procCPUTime is the user plus system CPU time of process pid, from
// /proc/<pid>/stat (all its threads; not its children).
func procCPUTime(b *testing.B, pid int) time.Duration {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatalf("read the CPU time of process %d: %v", pid, err)
	}
	// The command name, in parentheses, may hold spaces: fields are
	// counted after its closing parenthesis, from field 3 (state) on.
	_, rest, ok := bytes.Cut(raw, []byte(") "))
	f := strings.Fields(string(rest))
	if !ok || len(f) < 13 {
		b.Fatalf("unexpected /proc/%d/stat: %q", pid, raw)
	}
	var ticks int64
	for _, v := range f[11:13] { // utime and stime, fields 14 and 15
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			b.Fatalf("unexpected /proc/%d/stat: %q", pid, raw)
		}
		ticks += n
	}
	// Linux reports them in USER_HZ, which is 100 on every architecture Go
	// supports.
	return time.Duration(ticks) * (time.Second / 100)
}

// warmUp starts the todo gateway (gateways are lazy) and checks that the
// list is empty, so the first queries do not pay for the process start.
func (s *loadService) warmUp(b *testing.B) {
	b.Helper()
	for _, u := range s.urls() {
		if n := s.countTodos(b, u); n != 0 {
			b.Fatalf("a new todo database holds %d todos", n)
		}
	}
}

// countTodos asks the todo server, through the service's gateway, how many
// todos it holds. The gateway truncates large structured results, so this
// is only for a short list; see storedTodos.
func (s *loadService) countTodos(b *testing.B, url string) int {
	b.Helper()
	var structured any
	if s.proc != nil {
		code, body := do(b, http.MethodPost, url+"/api/servers/todo/execute", "", map[string]any{"tool_name": "list_todos"})
		res, _ := body["result"].(map[string]any)
		if code != http.StatusOK || res == nil || res["is_error"] == true {
			b.Fatalf("list_todos: %d %v", code, body)
		}
		structured = res["structured"]
	} else {
		g, ok := s.app.disc.Gateway("todo")
		if !ok {
			b.Fatal("no gateway named todo")
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		res, err := g.Execute(ctx, "list_todos", map[string]any{})
		if err != nil {
			b.Fatalf("list_todos: %v", err)
		}
		if res.IsError {
			b.Fatalf("list_todos: %s", res.Text())
		}
		structured = res.Structured
	}
	raw, err := json.Marshal(structured)
	if err != nil {
		b.Fatal(err)
	}
	var out struct {
		Count *int `json:"count"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || out.Count == nil {
		b.Fatalf("list_todos: no count in %.200s (%v)", raw, err)
	}
	return *out.Count
}

// storedTodos counts the todos in the todo servers' database files (one
// per replica), and their distinct titles: the model numbers every title,
// so titles are distinct across the files too.
func (s *loadService) storedTodos(b *testing.B) (n, titles int) {
	b.Helper()
	dbs := s.todoDBs
	if len(dbs) == 0 {
		dbs = []string{s.todoDB}
	}
	for _, f := range dbs {
		dn, dt := loadCountTodos(b, f)
		n, titles = n+dn, titles+dt
	}
	return n, titles
}

// loadCountTodos counts the todos in a todo server's database file, and
// their distinct titles, with the SQLite driver the store registers. It
// reads while todo-mcp runs: the file is in WAL mode.
func loadCountTodos(b *testing.B, file string) (n, titles int) {
	b.Helper()
	db, err := sql.Open("sqlite", "file:"+file+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = db.Close() }() // read-only count; a close error changes nothing
	if err := db.QueryRow("SELECT count(*), count(DISTINCT title) FROM todos").Scan(&n, &titles); err != nil {
		b.Fatalf("count the todos in %s: %v", file, err)
	}
	return n, titles
}

// storeBytes returns the size of the service's SQLite database, its
// write-ahead log included.
func (s *loadService) storeBytes(b *testing.B) int64 {
	b.Helper()
	var n int64
	for _, p := range []string{s.db, s.db + "-wal"} {
		fi, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			b.Fatal(err)
		}
		n += fi.Size()
	}
	return n
}

// loadLog collects the service's log lines (warnings and errors).
type loadLog struct{ testenv.SyncBuffer }

func (l *loadLog) lines() []string {
	return strings.FieldsFunc(l.String(), func(r rune) bool { return r == '\n' })
}

// loadModel is an OpenAI-compatible chat server that answers every
// decision from its context, as the script of a todo query goes: list the
// todo tools if the environment holds no list yet, else create one todo if
// this query has not, else answer.
type loadModel struct {
	srv     *httptest.Server
	calls   atomic.Int64 // chat requests
	creates atomic.Int64 // create_todo executes asked for
	bad     atomic.Int64 // requests it could not read
	// delay is how long it takes to answer (ELYSIA_LOAD_MODEL_DELAY), to
	// stand for a real model's latency.
	delay time.Duration
}

func loadNewModel(b *testing.B) *loadModel {
	b.Helper()
	m := &loadModel{}
	if v := os.Getenv("ELYSIA_LOAD_MODEL_DELAY"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			b.Fatalf("ELYSIA_LOAD_MODEL_DELAY=%q: want a duration such as 500ms", v)
		}
		m.delay = d
	}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	return m
}

// loadDecisionContext is the part of the decision context (see
// docs/DECISION_PROMPT.md) the scripted model reads.
type loadDecisionContext struct {
	UserPrompt       *string                               `json:"user_prompt"`
	Environment      map[string]map[string]json.RawMessage `json:"environment"`
	AvailableOptions []struct {
		Name string `json:"name"`
	} `json:"available_options"`
	TasksCompleted []struct {
		Tool   string         `json:"tool"`
		Inputs map[string]any `json:"inputs"`
		Error  bool           `json:"error"`
	} `json:"tasks_completed"`
}

func (m *loadModel) serve(w http.ResponseWriter, r *http.Request) {
	m.calls.Add(1)
	fail := func(format string, args ...any) {
		m.bad.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": fmt.Sprintf(format, args...)}})
	}
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		fail("unexpected %s %s", r.Method, r.URL.Path)
		return
	}
	var req struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		fail("bad chat request: %v", err)
		return
	}
	// The decision context is the last user message that is one; a
	// re-ask after a rejected answer comes after it.
	var dc *loadDecisionContext
	for i := len(req.Messages) - 1; i >= 0 && dc == nil; i-- {
		if req.Messages[i].Role != "user" {
			continue
		}
		var c loadDecisionContext
		if err := json.Unmarshal([]byte(loadMessageText(req.Messages[i].Content)), &c); err == nil && c.UserPrompt != nil {
			dc = &c
		}
	}
	if dc == nil {
		fail("no decision context among %d messages", len(req.Messages))
		return
	}
	if m.delay > 0 {
		t := time.NewTimer(m.delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return
		}
	}
	tool, args, content := loadDecide(dc, &m.creates)
	argJSON, _ := json.Marshal(args) // maps of strings always marshal
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-load", "object": "chat.completion", "created": time.Now().Unix(), "model": req.Model,
		"choices": []map[string]any{{"index": 0, "finish_reason": "tool_calls", "message": map[string]any{
			"role": "assistant", "content": content,
			"tool_calls": []map[string]any{{"id": fmt.Sprintf("call_%d", m.calls.Load()), "type": "function",
				"function": map[string]any{"name": tool, "arguments": string(argJSON)}}},
		}}},
		"usage": map[string]any{"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
	})
}

// loadDecide is the script: the chosen function, its arguments and the
// update for the user.
func loadDecide(dc *loadDecisionContext, creates *atomic.Int64) (string, map[string]any, string) {
	if _, listed := dc.Environment["mcp_todo"]["list"]; !listed {
		return "mcp_todo", map[string]any{"action": "list"}, "Looking at the todo tools."
	}
	for _, t := range dc.TasksCompleted {
		if a, _ := t.Inputs["action"].(string); t.Tool == "mcp_todo" && a == "execute" && !t.Error {
			return "text_response", map[string]any{"text": "done"}, "Answering."
		}
	}
	n := creates.Add(1)
	return "mcp_todo", map[string]any{"action": "execute", "tool_name": "create_todo",
		"tool_inputs": map[string]any{"title": fmt.Sprintf("load %d", n)}}, "Adding the todo."
}

// loadMessageText returns a chat message's text: its content is a string
// or a list of text parts.
func loadMessageText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// loadStats is what a load run measured.
type loadStats struct {
	elapsed time.Duration
	// harnessCPU is the test process's CPU time (user+system), and
	// serviceCPU the service process's; with the service in the test
	// process, harnessCPU holds both and serviceCPU is 0.
	harnessCPU time.Duration
	serviceCPU time.Duration
	// childCPU is the CPU time of the service's stdio MCP servers over the
	// run, by command name (todo-mcp); empty in the test process.
	childCPU  map[string]time.Duration
	completed int
	errors    int
	heals     int // self_healing_error envelopes (not errors)
	// sent are the completed queries, until checkSaved has read them
	// back; unsaved counts those whose answer was not saved.
	sent            []loadSent
	unsaved         int
	unsavedExamples []string
	latencies       []time.Duration
	// kinds counts errors by a short description; examples keeps one
	// full message per kind.
	kinds    map[string]int
	examples map[string]string
}

func (s *loadStats) merge(o loadStats) {
	s.elapsed += o.elapsed
	s.harnessCPU += o.harnessCPU
	s.serviceCPU += o.serviceCPU
	for name, d := range o.childCPU {
		if s.childCPU == nil {
			s.childCPU = map[string]time.Duration{}
		}
		s.childCPU[name] += d
	}
	s.completed += o.completed
	s.errors += o.errors
	s.heals += o.heals
	s.sent = append(s.sent, o.sent...)
	s.unsaved += o.unsaved
	s.unsavedExamples = append(s.unsavedExamples, o.unsavedExamples...)
	s.latencies = append(s.latencies, o.latencies...)
	for k, n := range o.kinds {
		s.addError(k, o.examples[k], n)
	}
}

func (s *loadStats) addError(kind, example string, n int) {
	if s.kinds == nil {
		s.kinds, s.examples = map[string]int{}, map[string]string{}
	}
	s.kinds[kind] += n
	if _, ok := s.examples[kind]; !ok {
		s.examples[kind] = example
	}
}

// errorKinds describes the errors, most frequent first.
func (s *loadStats) errorKinds() []string {
	kinds := slices.Collect(maps.Keys(s.kinds))
	slices.SortFunc(kinds, func(a, b string) int { return s.kinds[b] - s.kinds[a] })
	out := make([]string, len(kinds))
	for i, k := range kinds {
		out[i] = fmt.Sprintf("%d× %s (e.g. %s)", s.kinds[k], k, s.examples[k])
	}
	return out
}

// loadRun runs clients clients, each sending queries until d has passed,
// and waits for the queries in flight. With long set, each client sends
// all its queries on one conversation; otherwise each query starts a new
// one.
func loadRun(b *testing.B, svc *loadService, clients int, long bool, d time.Duration) loadStats {
	b.Helper()
	urls, client := svc.urls(), svc.client
	cpu0, svcCPU0, child0 := loadCPUTime(b), svc.cpuTime(b), svc.childCPUTime(b)
	start := time.Now()
	deadline := start.Add(d)
	profiled := svc.profileRun(b, d)
	results := make([]loadStats, clients)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			st := &results[i]
			for n := 0; time.Now().Before(deadline); n++ {
				// With replicas, a client's queries take turns: each
				// lands on another replica than its conversation's
				// last one, as behind a balancer without stickiness.
				q := loadSent{replica: (i + n) % len(urls), conv: fmt.Sprintf("c%d", i), text: fmt.Sprintf("add todo %d-%d", i, n)}
				if !long {
					q.conv = fmt.Sprintf("c%d-%d", i, n)
				}
				url := fmt.Sprintf("%s/query/%s/%s", urls[q.replica], loadUser, q.conv)
				t0 := time.Now()
				heals, kind, err := loadQuery(client, url, q.text)
				st.heals += heals
				if err != nil {
					st.errors++
					st.addError(kind, err.Error(), 1)
					continue
				}
				st.completed++
				st.latencies = append(st.latencies, time.Since(t0))
				st.sent = append(st.sent, q)
			}
		})
	}
	wg.Wait()
	profiled()
	var all loadStats
	for _, r := range results {
		all.merge(r)
	}
	all.elapsed = time.Since(start)
	all.harnessCPU = loadCPUTime(b) - cpu0
	all.serviceCPU = svc.cpuTime(b) - svcCPU0
	all.childCPU = svc.childCPUTime(b)
	for name, d := range child0 {
		all.childCPU[name] -= d
	}
	all.unsaved, all.unsavedExamples = svc.checkSaved(b, all.sent)
	all.sent = nil
	return all
}

// profileRun starts a CPU profile of the service process for the d of a
// load run, through its --pprof-addr, into s.profile; the returned func
// waits for it (d rounded up to whole seconds, as /debug/pprof/profile
// takes them) and fails b if it could not be written. It also saves the
// allocation profile (allocs) before and after the run, into s.profile
// with .allocs0 and .allocs1 appended: `go tool pprof -base FILE.allocs0
// FILE.allocs1` shows what the run allocated. Without
// ELYSIA_LOAD_CPUPROFILE both do nothing. Unlike serve --cpuprofile, the
// profile holds the run alone: not the start, warm-up, prelude or the
// reading back of every conversation after it.
func (s *loadService) profileRun(b *testing.B, d time.Duration) (wait func()) {
	b.Helper()
	if s.pprof == "" {
		return func() {}
	}
	if err := s.savePprof("allocs", s.profile+".allocs0", time.Minute); err != nil {
		b.Errorf("allocation profile of the service: %v", err)
	}
	secs := int((d + time.Second - 1) / time.Second)
	done := make(chan error, 1)
	go func() {
		done <- s.savePprof(fmt.Sprintf("profile?seconds=%d", secs), s.profile, d+time.Minute)
	}()
	return func() {
		if err := <-done; err != nil {
			b.Errorf("CPU profile of the service: %v", err)
		}
		if err := s.savePprof("allocs", s.profile+".allocs1", time.Minute); err != nil {
			b.Errorf("allocation profile of the service: %v", err)
		}
	}
}

// savePprof saves the service's /debug/pprof/<name> into file, taking at
// most timeout.
func (s *loadService) savePprof(name, file string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	url := fmt.Sprintf("http://%s/debug/pprof/%s", s.pprof, name)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }() // read to the end below
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close() // the copy's error is the one to report
		return fmt.Errorf("GET %s: %w", url, err)
	}
	return f.Close()
}

// loadCPUTime is the process's user plus system CPU time, from getrusage.
func loadCPUTime(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loadQuery sends one query and reads its stream to the completed
// envelope. It returns the number of self-healing errors seen and, on
// failure, a short kind and the error.
func loadQuery(client *http.Client, url, text string) (heals int, kind string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), loadQueryTimeout)
	defer cancel()
	body, err := json.Marshal(map[string]string{"query": text})
	if err != nil {
		return 0, "request", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, "request", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, "transport", err
	}
	defer func() { _ = resp.Body.Close() }() // the status and read errors are what count
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		return 0, fmt.Sprintf("status %d", resp.StatusCode), fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(body))
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		return 0, "content type", fmt.Errorf("content type %q", ct)
	}
	rd := bufio.NewReader(resp.Body)
	completed := false
	var failure error
	for {
		line, rerr := rd.ReadBytes('\n')
		if data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r\n"), []byte("data: ")); ok {
			var env struct {
				Type    string          `json:"type"`
				Payload json.RawMessage `json:"payload"`
			}
			switch {
			case json.Unmarshal(data, &env) != nil:
				failure = fmt.Errorf("bad event %.200s", data)
				kind = "bad event"
			case completed:
				failure = fmt.Errorf("%s event after completed", env.Type)
				kind = "event after completed"
			case env.Type == "error" && failure == nil:
				failure = fmt.Errorf("error event: %.300s", env.Payload)
				kind = "error event"
			case env.Type == "self_healing_error":
				heals++
			case env.Type == "completed":
				completed = true
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return heals, "stream read", rerr
		}
	}
	if failure != nil {
		return heals, kind, failure
	}
	if !completed {
		return heals, "no completed", fmt.Errorf("the stream ended without a completed event")
	}
	return heals, "", nil
}

// loadPercentile returns the p-quantile (nearest rank) of sorted lat.
func loadPercentile(lat []time.Duration, p float64) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	i := int(p*float64(len(lat))+0.5) - 1
	return lat[min(max(i, 0), len(lat)-1)]
}

// loadWatchGoroutines samples the goroutine count every 50 ms until the
// returned func is called, which returns the highest count seen.
func loadWatchGoroutines() func() int {
	stop := make(chan struct{})
	done := make(chan int)
	go func() {
		peak := runtime.NumGoroutine()
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				done <- max(peak, runtime.NumGoroutine())
				return
			case <-t.C:
				peak = max(peak, runtime.NumGoroutine())
			}
		}
	}()
	return func() int { close(stop); return <-done }
}

// loadSettleGoroutines polls until the goroutine count is back to baseline
// or timeout passes; it returns how many are left over and, if any, their
// stacks.
func loadSettleGoroutines(baseline int, timeout time.Duration) (int, string) {
	deadline := time.Now().Add(timeout)
	for {
		n := runtime.NumGoroutine()
		if n <= baseline {
			return 0, ""
		}
		if time.Now().After(deadline) {
			var buf bytes.Buffer
			_ = pprof.Lookup("goroutine").WriteTo(&buf, 1)
			return n - baseline, buf.String()
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// loadGoroutineSummary lists the n largest groups of goroutines with the
// same stack, each as its count and innermost frames outside the runtime.
func loadGoroutineSummary(n int) string {
	var buf bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&buf, 1)
	type group struct {
		count int
		where string
	}
	var groups []group
	for _, block := range strings.Split(buf.String(), "\n\n") {
		lines := strings.Split(block, "\n")
		var g group
		if _, err := fmt.Sscanf(lines[0], "%d @", &g.count); err != nil {
			continue
		}
		var frames []string
		for _, l := range lines[1:] {
			f := strings.Fields(l)
			if len(f) < 3 || f[0] != "#" || strings.HasPrefix(f[2], "runtime.") || strings.HasPrefix(f[2], "internal/") {
				continue
			}
			name, _, _ := strings.Cut(f[2], "+0x")
			if frames = append(frames, name); len(frames) == 4 {
				break
			}
		}
		g.where = strings.Join(frames, " < ")
		groups = append(groups, g)
	}
	slices.SortFunc(groups, func(a, b group) int { return b.count - a.count })
	var out strings.Builder
	for _, g := range groups[:min(n, len(groups))] {
		fmt.Fprintf(&out, "%6d %s\n", g.count, g.where)
	}
	return out.String()
}

// TestServePprofAddr: serve --pprof-addr serves Go's profiles on a
// listener of its own, which the service's address does not share, and
// refuses an address that is not loopback.
func TestServePprofAddr(t *testing.T) {
	t.Parallel()
	code, _, stderr := runCLI(t, t.TempDir(), nil, "serve", "--addr", "127.0.0.1:0", "--pprof-addr", "0.0.0.0:6060")
	if code != 2 || !strings.Contains(stderr, "--pprof-addr 0.0.0.0:6060: want a loopback address") {
		t.Errorf("serve --pprof-addr 0.0.0.0:6060: exit %d, stderr %q; want 2 asking for a loopback address", code, stderr)
	}

	pprofAddr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	s := startService(t, serveOptions{Args: []string{"--pprof-addr", pprofAddr}})
	if code, body := getText(t, "http://"+pprofAddr+"/debug/pprof/cmdline"); code != http.StatusOK || !strings.Contains(body, "--pprof-addr") {
		t.Errorf("GET /debug/pprof/cmdline on --pprof-addr: %d %q; want 200 with the command line", code, body)
	}
	if code, body := getText(t, "http://"+pprofAddr+"/debug/pprof/goroutine?debug=1"); code != http.StatusOK || !strings.Contains(body, "goroutine profile:") {
		t.Errorf("GET /debug/pprof/goroutine on --pprof-addr: %d %.100q; want 200 with the goroutines", code, body)
	}
	if code, _ := getText(t, s.URL+"/debug/pprof/cmdline"); code != http.StatusNotFound {
		t.Errorf("GET /debug/pprof/cmdline on the service's address: %d; want 404", code)
	}
}

// getText sends GET url and returns the status and the body.
func getText(tb testing.TB, url string) (int, string) {
	tb.Helper()
	req, err := http.NewRequestWithContext(tb.Context(), http.MethodGet, url, nil)
	if err != nil {
		tb.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }() // read to the end below
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return resp.StatusCode, string(body)
}
