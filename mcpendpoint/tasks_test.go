package mcpendpoint

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/mcpendpoint/internal/tasks"
	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// taskCall posts the 2026-07-28 request method of the task id to ep as
// user, with the tasks extension declared when ext, and returns the HTTP
// status and the JSON-RPC reply.
func taskCall(t *testing.T, ep *Endpoint, user, method, id, name string, ext bool, extra map[string]any) (int, map[string]any) {
	t.Helper()
	caps := map[string]any{}
	if ext {
		caps["extensions"] = map[string]any{tasksExtension: map[string]any{}}
	}
	params := map[string]any{"taskId": id, "_meta": map[string]any{
		"io.modelcontextprotocol/protocolVersion": mcp.ProtocolVersion20260728, "io.modelcontextprotocol/clientCapabilities": caps,
	}}
	for k, v := range extra {
		params[k] = v
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(string(body)))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set(mcp.HeaderProtocolVersion, mcp.ProtocolVersion20260728)
	r.Header.Set(mcp.HeaderMethod, method)
	r.Header.Set(mcp.HeaderName, name)
	w := httptest.NewRecorder()
	ep.ServeMCP(w, r, user)
	var m map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &m); err != nil {
		t.Fatalf("%s: %v in %q", method, err, w.Body.String())
	}
	return w.Code, m
}

func rpcCode(m map[string]any) float64 {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(float64)
	return c
}

// TestTaskMethodsAcrossReplicas: a task one replica keeps is read,
// answered and cancelled through another on the same store, by its user
// only, and only by a client that declared the extension.
func TestTaskMethodsAcrossReplicas(t *testing.T) {
	st := tasks.NewMemStore()
	src := &source{expose: mcpconfig.DefaultExpose(), gws: []*mcpgateway.Gateway{}}
	a, b := New(src, &Options{Tasks: st}), New(src, &Options{Tasks: st})
	t.Cleanup(func() { _ = a.Close(t.Context()); _ = b.Close(t.Context()) })
	const id = "task-0123abcd"
	if err := a.tasks.CreateTask(t.Context(), id, "alice", time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	asks := `{"q1":{"method":"elicitation/create","params":{"message":"one"}},"q2":{"method":"elicitation/create","params":{"message":"two"}}}`
	if err := a.writeQuestions(t.Context(), "alice", id, mustRequests(t, asks)); err != nil {
		t.Fatal(err)
	}

	code, m := taskCall(t, b, "alice", "tasks/get", id, id, true, nil)
	res, _ := m["result"].(map[string]any)
	if code != http.StatusOK || res["status"] != tasks.InputRequired || res["resultType"] != "complete" || res["taskId"] != id {
		t.Fatalf("tasks/get on the other replica: %d %v", code, m)
	}
	if reqs, _ := res["inputRequests"].(map[string]any); len(reqs) != 2 {
		t.Errorf("inputRequests = %v, want q1 and q2", res["inputRequests"])
	}
	if _, m := taskCall(t, b, "bob", "tasks/get", id, id, true, nil); rpcCode(m) != mcp.INVALID_PARAMS {
		t.Errorf("alice's task read by bob: %v, want -32602", m)
	}
	if code, m := taskCall(t, b, "alice", "tasks/get", id, id, false, nil); code != http.StatusBadRequest || rpcCode(m) != mcp.MISSING_REQUIRED_CLIENT_CAPABILITY {
		t.Errorf("tasks/get without the extension: %d %v, want 400 -32021", code, m)
	}
	if code, m := taskCall(t, b, "alice", "tasks/get", id, "task-other", true, nil); code != http.StatusBadRequest || rpcCode(m) != mcp.HEADER_MISMATCH {
		t.Errorf("tasks/get with another Mcp-Name: %d %v, want 400 -32020", code, m)
	}

	answer := map[string]any{"inputResponses": map[string]any{"q1": map[string]any{"action": "accept", "content": map[string]any{"ok": true}}, "nope": map[string]any{}}}
	if _, m := taskCall(t, b, "alice", "tasks/update", id, id, true, answer); fmt.Sprint(m["result"]) != "map[resultType:complete]" {
		t.Errorf("tasks/update ack: %v", m)
	}
	_, m = taskCall(t, a, "alice", "tasks/get", id, id, true, nil)
	res, _ = m["result"].(map[string]any)
	if reqs, _ := res["inputRequests"].(map[string]any); res["status"] != tasks.InputRequired || len(reqs) != 1 || reqs["q2"] == nil {
		t.Errorf("after answering q1: %v, want q2 alone", res)
	}
	if task, _ := st.Task(t.Context(), id, "alice"); !strings.Contains(task.Answers, `"q1"`) || strings.Contains(task.Answers, "nope") {
		t.Errorf("answers kept: %s, want q1's alone", task.Answers)
	}

	for range 2 { // the second on an ended task: the same ack
		if _, m := taskCall(t, b, "alice", "tasks/cancel", id, id, true, nil); fmt.Sprint(m["result"]) != "map[resultType:complete]" {
			t.Errorf("tasks/cancel ack: %v", m)
		}
	}
	if _, m := taskCall(t, a, "alice", "tasks/get", id, id, true, nil); m["result"].(map[string]any)["status"] != tasks.Cancelled {
		t.Errorf("after the cancel: %v", m)
	}
	if _, m := taskCall(t, b, "bob", "tasks/cancel", id, id, true, nil); rpcCode(m) != mcp.INVALID_PARAMS {
		t.Errorf("alice's task cancelled by bob: %v, want -32602", m)
	}
}

func mustRequests(t *testing.T, s string) mcp.InputRequests {
	t.Helper()
	var r mcp.InputRequests
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		t.Fatal(err)
	}
	return r
}
