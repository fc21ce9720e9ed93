package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/elysia-go/elysia/internal/testenv"
)

// getWithID sends GET url with the request id id and checks the 200.
func getWithID(tb testing.TB, url, id string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(tb.Context(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("X-Request-ID", id)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	_ = resp.Body.Close() // only the status matters
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("GET %s: status %d", url, resp.StatusCode)
	}
}

// jsonLogLines returns the log's JSON records; lines that are not JSON
// (the "serving on" line on stdout) are left out.
func jsonLogLines(out string) []map[string]any {
	var recs []map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var rec map[string]any
		if json.Unmarshal(sc.Bytes(), &rec) == nil {
			recs = append(recs, rec)
		}
	}
	return recs
}

// TestRequestLogJSON: when stderr is not a terminal the log stays JSON,
// and a request served well is logged at debug: not at the default level,
// as a JSON record with its request id under --log-level debug.
func TestRequestLogJSON(t *testing.T) {
	t.Parallel()
	quiet := startService(t, serveOptions{})
	getWithID(t, quiet.URL+"/readyz", "quiet-1")
	debug := startService(t, serveOptions{Args: []string{"--log-level", "debug"}})
	getWithID(t, debug.URL+"/readyz", "debug-1")
	testenv.WaitFor(t, 10*time.Second, "the request's log record", func() bool {
		return strings.Contains(debug.Output(), "debug-1")
	})
	quiet.Stop(t) // every record it would write is written
	if strings.Contains(quiet.Output(), "quiet-1") || strings.Contains(quiet.Output(), "http request") {
		t.Errorf("a request was logged at the default level:\n%s", quiet.Output())
	}
	if len(jsonLogLines(quiet.Output())) == 0 {
		t.Errorf("no JSON log record without a terminal:\n%s", quiet.Output())
	}
	var found map[string]any
	for _, rec := range jsonLogLines(debug.Output()) {
		if rec["request_id"] == "debug-1" {
			found = rec
		}
	}
	if found == nil || found["msg"] != "http request" || found["level"] != "DEBUG" || found["path"] != "/readyz" || found["status"] != 200.0 {
		t.Errorf("request record %v; want a DEBUG http request of /readyz, status 200:\n%s", found, debug.Output())
	}
}

// humanLine is a line of the human log format: time, level, message.
var humanLine = regexp.MustCompile(`^\d\d:\d\d:\d\d (DEBUG|INFO |WARN |ERROR) \S`)

// TestRequestLogOnATerminal: with stderr on a terminal (a real pty), the
// log is one compact human line per record, a request as "GET /readyz 200
// <duration>"; ELYSIA_LOG_FORMAT=json keeps JSON there.
func TestRequestLogOnATerminal(t *testing.T) {
	t.Parallel()
	out := serveOnPTY(t, nil, "term-1")
	var lines []string
	for l := range strings.SplitSeq(strings.ReplaceAll(out, "\r\n", "\n"), "\n") {
		if l != "" {
			lines = append(lines, l)
		}
	}
	request := regexp.MustCompile(`^\d\d:\d\d:\d\d DEBUG GET /readyz 200 [0-9.]+[µnm]?s request_id=term-1$`)
	var sawRequest, sawListening bool
	for _, l := range lines {
		switch {
		case !humanLine.MatchString(l):
			t.Errorf("a log line on the terminal is not in the human format: %q", l)
		case request.MatchString(l):
			sawRequest = true
		case strings.Contains(l, "INFO  listening addr=127.0.0.1:"):
			sawListening = true
		}
	}
	if !sawRequest || !sawListening {
		t.Errorf("want the listening line and the request as %s on the terminal:\n%s", request, out)
	}

	out = serveOnPTY(t, []string{"ELYSIA_LOG_FORMAT=json"}, "term-2")
	recs := jsonLogLines(strings.ReplaceAll(out, "\r\n", "\n"))
	if len(recs) == 0 || !strings.Contains(out, `"request_id":"term-2"`) || humanLineIn(out) {
		t.Errorf("ELYSIA_LOG_FORMAT=json on a terminal: want JSON records only:\n%s", out)
	}
}

func humanLineIn(out string) bool {
	for l := range strings.SplitSeq(out, "\n") {
		if humanLine.MatchString(strings.TrimSpace(l)) {
			return true
		}
	}
	return false
}

// serveOnPTY runs `elysia serve --log-level debug` with its stderr on a
// pty, sends GET /readyz with the request id id once it answers, stops it
// and returns what it wrote on the terminal.
func serveOnPTY(t *testing.T, env []string, id string) string {
	t.Helper()
	master, slave := openPTY(t)
	dir := t.TempDir()
	writeFile(t, dir+"/mcp.json", defaultConfig(t))
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	cmd := exec.Command(elysiaBin(t), "serve", "--addr", addr, "--config", dir+"/mcp.json", "--log-level", "debug")
	cmd.Dir = dir
	cmd.Env = append(cleanEnv(), env...)
	cmd.Stdout, cmd.Stderr = &bytes.Buffer{}, slave
	var term testenv.SyncBuffer
	copied := make(chan struct{})
	go func() { // ends when the last holder of the slave closes it
		defer close(copied)
		_, _ = io.Copy(&term, master) // EIO once no process holds the slave
	}()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_ = slave.Close() // the child holds it now
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait() // stopped by the test: its status says nothing more
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	testenv.WaitFor(t, 20*time.Second, "elysia /readyz", func() bool {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return false
		}
		_ = resp.Body.Close() // only the status matters
		return resp.StatusCode == http.StatusOK
	})
	getWithID(t, "http://"+addr+"/readyz", id)
	_ = cmd.Process.Signal(os.Interrupt)
	select {
	case <-exited:
	case <-time.After(15 * time.Second):
		t.Fatalf("elysia did not stop within 15 s of SIGINT:\n%s", term.String())
	}
	select {
	case <-copied:
	case <-time.After(5 * time.Second):
		t.Fatal("the terminal did not close after elysia exited")
	}
	return term.String()
}

// TestHumanLogEscapes: the human format quotes a value with spaces, and
// what a terminal would act on (escape sequences, bidi overrides) in a
// message or a value is escaped.
func TestHumanLogEscapes(t *testing.T) {
	var buf bytes.Buffer
	logger, err := newLogger(&buf, "debug", "text")
	if err != nil {
		t.Fatal(err)
	}
	logger.With("server", "todo").WithGroup("call").Info("said \x1b[2Jhi", "text", "two words\u202e", "err", errors.New("bad\x1b]52;c;x\x07"), slog.Duration("took", 1234567*time.Nanosecond))
	got := buf.String()
	if strings.ContainsAny(got, "\x1b\u202e\x07") || strings.Count(got, "\n") != 1 {
		t.Fatalf("the line holds terminal controls or is not one line: %q", got)
	}
	if !humanLine.MatchString(got) || !strings.Contains(got, `server=todo call.text="two words\u202e"`) || !strings.Contains(got, "call.took=1.23ms") {
		t.Errorf("line %q: want the attrs quoted, grouped and compact", got)
	}
}
