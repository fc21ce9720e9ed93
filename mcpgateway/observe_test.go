package mcpgateway

import (
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/elysia-go/elysia/internal/testenv"
	"github.com/elysia-go/elysia/tools"
)

// recorder is a goroutine-safe Observer that keeps what it is told.
type recorder struct {
	mu       sync.Mutex
	calls    []string // "tool status"
	circuits []string
}

func (r *recorder) ObserveCall(server, tool, status string, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, server+" "+tool+" "+status)
}

func (r *recorder) ObserveCircuit(server, state string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.circuits = append(r.circuits, server+" "+state)
}

// logBuffer is a goroutine-safe buffer for a JSON slog handler.
type logBuffer struct{ testenv.SyncBuffer }

// records returns the logged records whose msg is msg.
func (b *logBuffer) records(t *testing.T, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if rec["msg"] == msg {
			out = append(out, rec)
		}
	}
	return out
}

// line returns the first logged line whose msg is msg, as written.
func (b *logBuffer) line(t *testing.T, msg string) string {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		var rec struct{ Msg string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if rec.Msg == msg {
			return line
		}
	}
	t.Fatalf("nothing logged as %q", msg)
	return ""
}

func TestObserverAndCallLog(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		obs := &recorder{}
		logs := &logBuffer{}
		p, g := newInProcess(t, &Options{Observer: obs, CircuitFailures: 2, CrashLoopDeaths: 100,
			Logger: slog.New(slog.NewJSONHandler(logs, nil))})
		ctx := t.Context()
		call := tools.Call{RequestID: "req-1", UserID: "alice", ConversationID: "c1",
			Args: map[string]any{"action": "execute", "tool_name": "echo", "tool_inputs": map[string]any{"message": "hi"}}}
		if res, err := g.Run(ctx, call, tools.Discard); err != nil || res.IsError {
			t.Fatalf("Run = %v %+v", err, res)
		}
		if _, err := g.Execute(ctx, "fail", nil); err != nil {
			t.Fatal(err)
		}
		if _, err := g.Execute(ctx, "hang", nil); err == nil {
			t.Fatal("hang returned")
		}
		p.setDown(true)
		killSession(g)
		synctest.Wait()
		for range 3 { // two failures open the circuit, the third is refused
			_, _ = g.Execute(ctx, "echo", map[string]any{"message": "x"})
		}
		_ = g.Close()

		obs.mu.Lock()
		defer obs.mu.Unlock()
		want := []string{"todo echo success", "todo fail failure", "todo hang timeout",
			"todo echo failure", "todo echo failure", "todo echo failure"}
		if strings.Join(obs.calls, ",") != strings.Join(want, ",") {
			t.Errorf("ObserveCall got\n%v\nwant\n%v", obs.calls, want)
		}
		if got := strings.Join(obs.circuits, ","); got != "todo open" {
			t.Errorf("ObserveCircuit got %s, want todo open", got)
		}

		recs := logs.records(t, "tool call")
		if len(recs) != 6 {
			t.Fatalf("logged %d tool calls, want 6", len(recs))
		}
		first := recs[0]
		for k, v := range map[string]any{"request_id": "req-1", "user": "alice", "conversation": "c1",
			"server": "todo", "tool": "echo", "status": "success", "level": "INFO"} {
			if first[k] != v {
				t.Errorf("log %s = %v, want %v (record %v)", k, first[k], v, first)
			}
		}
		if _, ok := first["duration"]; !ok {
			t.Errorf("log has no duration: %v", first)
		}
		// The server is named once, under one key: not also as gateway.
		line := logs.line(t, "tool call")
		if n := strings.Count(line, `"server":`); n != 1 {
			t.Errorf("a tool call names the server %d times, want once: %s", n, line)
		}
		if _, ok := first["gateway"]; ok {
			t.Errorf("a tool call names the server as gateway too: %s", line)
		}
		if e, _ := recs[1]["err"].(string); !strings.Contains(e, "it broke") {
			t.Errorf("isError log err = %q", e)
		}
		if e, _ := recs[5]["err"].(string); !strings.Contains(e, "circuit open") || recs[5]["status"] != "failure" {
			t.Errorf("refused call log = %v", recs[5])
		}
	})
}
