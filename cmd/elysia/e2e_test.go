package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/elysia-go/elysia/internal/testenv"
)

// envelope is one event as the service sends it.
type envelope struct {
	Type           string          `json:"type"`
	ID             string          `json:"id"`
	UserID         string          `json:"user_id"`
	ConversationID string          `json:"conversation_id"`
	QueryID        string          `json:"query_id"`
	Payload        json.RawMessage `json:"payload"`
}

// payload decodes the envelope's payload into a map.
func (e envelope) payload(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(e.Payload, &m); err != nil {
		t.Fatalf("%s payload: %v: %s", e.Type, err, e.Payload)
	}
	return m
}

func types(evs []envelope) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}

func ofType(evs []envelope, typ string) []envelope {
	var out []envelope
	for _, e := range evs {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// sseResult is the answer to POST /query: a status, and the events of a
// stream or the JSON body of a refused request.
type sseResult struct {
	Status int
	Events []envelope
	Body   map[string]any
	Header http.Header
}

// querySSE posts a query and reads the event stream to its end.
func querySSE(t testing.TB, ctx context.Context, base, key, user, conv, query string) sseResult {
	t.Helper()
	b, _ := json.Marshal(map[string]string{"query": query, "query_id": "q-" + conv})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/query/"+user+"/"+conv, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST /query/%s/%s: %v", user, conv, err)
	}
	defer resp.Body.Close()
	res := sseResult{Status: resp.StatusCode, Header: resp.Header}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		raw, _ := io.ReadAll(resp.Body)
		_ = json.Unmarshal(raw, &res.Body)
		return res
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 4<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var e envelope
		if err := json.Unmarshal([]byte(data), &e); err != nil {
			t.Fatalf("SSE data is not an envelope: %v: %s", err, data)
		}
		res.Events = append(res.Events, e)
	}
	if err := sc.Err(); err != nil && ctx.Err() == nil {
		t.Fatalf("reading the event stream: %v", err)
	}
	return res
}

// dialWS opens /ws/query, offering the key as a bearer subprotocol.
func dialWS(t testing.TB, base, key string) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	opts := &websocket.DialOptions{}
	if key != "" {
		opts.Subprotocols = []string{"bearer." + key}
	}
	conn, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/ws/query", opts)
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("dial /ws/query: %v (status %d)", err, status)
	}
	conn.SetReadLimit(8 << 20)
	t.Cleanup(func() { conn.CloseNow() })
	return conn
}

// sendWS sends one query message.
func sendWS(t testing.TB, conn *websocket.Conn, msg map[string]string) {
	t.Helper()
	b, _ := json.Marshal(msg)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := conn.Write(ctx, websocket.MessageText, b); err != nil {
		t.Fatalf("websocket write: %v", err)
	}
}

// readWS reads envelopes until one of query queryID is completed or an
// error event arrives (an error for a refused query is its last event).
func readWS(t testing.TB, conn *websocket.Conn, queryID string, timeout time.Duration) []envelope {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	var out []envelope
	for {
		_, data, err := conn.Read(ctx)
		if err != nil {
			t.Fatalf("websocket read after %v: %v", types(out), err)
		}
		var e envelope
		if err := json.Unmarshal(data, &e); err != nil {
			t.Fatalf("websocket message is not an envelope: %v: %s", err, data)
		}
		if e.QueryID != queryID {
			continue
		}
		out = append(out, e)
		if e.Type == "completed" {
			return out
		}
		if e.Type == "error" && !hasType(out[:len(out)-1], "tree_update") {
			return out
		}
	}
}

func hasType(evs []envelope, typ string) bool { return len(ofType(evs, typ)) > 0 }

// todoScript is what a model does to add "Buy milk": list, execute, answer.
func todoScript() []reply {
	return []reply{
		call("mcp_todo", map[string]any{"action": "list"}),
		call("mcp_todo", map[string]any{"action": "execute", "tool_name": "create_todo",
			"tool_inputs": map[string]any{"title": "Buy milk", "priority": 2}}),
		answer("Added 'Buy milk'."),
	}
}

// listTodos returns the todo server's list_todos text through the API.
func listTodos(t testing.TB, base, key string) string {
	t.Helper()
	code, body := do(t, http.MethodPost, base+"/api/servers/todo/execute", key,
		map[string]any{"tool_name": "list_todos", "tool_inputs": map[string]any{}})
	if code != http.StatusOK {
		t.Fatalf("execute list_todos: %d %v", code, body)
	}
	b, _ := json.Marshal(body["result"])
	return string(b)
}

// checkTodoRun checks the events of a list → create_todo → answer run.
func checkTodoRun(t *testing.T, evs []envelope, user, conv string) {
	t.Helper()
	got := types(evs)
	if len(evs) == 0 || evs[len(evs)-1].Type != "completed" {
		t.Fatalf("events %v do not end with completed", got)
	}
	if n := len(ofType(evs, "completed")); n != 1 {
		t.Errorf("%d completed events in %v", n, got)
	}
	// The order of the first list pass, as in DESIGN.md's appendix: the
	// tool's status and result, then the tree_update of the decision.
	rest := got
	if rest[0] == "title" {
		rest = rest[1:]
	}
	if want := []string{"status", "result", "tree_update"}; len(rest) < 3 || !reflect.DeepEqual(rest[:3], want) {
		t.Errorf("events start %v, want [title?] %v", got, want)
	}
	for _, typ := range []string{"tree_update", "status", "result", "text", "completed"} {
		if !hasType(evs, typ) {
			t.Errorf("no %s event in %v", typ, got)
		}
	}
	if hasType(evs, "error") || hasType(evs, "self_healing_error") {
		t.Errorf("unexpected error events in %v", got)
	}
	for _, e := range evs {
		if e.UserID != user || e.ConversationID != conv || e.QueryID == "" || e.ID == "" {
			t.Errorf("envelope %s: user %q conversation %q query %q id %q", e.Type, e.UserID, e.ConversationID, e.QueryID, e.ID)
		}
	}
	list := ofType(evs, "result")[0].payload(t)
	md, _ := list["metadata"].(map[string]any)
	if md["server"] != "todo" || md["action"] != "list" {
		t.Errorf("list result metadata = %v", md)
	}
	objs, _ := list["objects"].([]any)
	if len(objs) != 5 {
		t.Fatalf("list result has %d objects, want 5: %v", len(objs), list)
	}
	first, _ := objs[0].(map[string]any)
	if first["_REF_ID"] != "mcp_todo_list_0_0" {
		t.Errorf("first object _REF_ID = %v, want mcp_todo_list_0_0", first["_REF_ID"])
	}
	for _, k := range []string{"name", "description", "inputs"} {
		if _, ok := first[k]; !ok {
			t.Errorf("list object lacks %q: %v", k, first)
		}
	}
	tu := ofType(evs, "tree_update")[0].payload(t)
	if tu["node"] != "base" || tu["decision"] != "mcp_todo" {
		t.Errorf("first tree_update = %v", tu)
	}
	text := ofType(evs, "text")
	tp := text[len(text)-1].payload(t)
	objs, _ = tp["objects"].([]any)
	if len(objs) != 1 || objs[0].(map[string]any)["text"] != "Added 'Buy milk'." {
		t.Errorf("text payload = %v", tp)
	}
}

// shape is an envelope without what differs between two runs: ids,
// conversation, query, and the objects of execute results (the todo's id
// and timestamps).
func shape(t testing.TB, evs []envelope) []string {
	t.Helper()
	out := make([]string, len(evs))
	for i, e := range evs {
		p := e.payload(t)
		if md, _ := p["metadata"].(map[string]any); e.Type == "result" && md["action"] == "execute" {
			p["objects"] = len(p["objects"].([]any))
		}
		b, _ := json.Marshal(p)
		out[i] = e.Type + " " + e.UserID + " " + string(b)
	}
	return out
}

// TestQueryOverSSEAndWebSocket runs the same scripted list → execute →
// answer query over both streams, and checks the todo was really stored.
func TestQueryOverSSEAndWebSocket(t *testing.T) {
	t.Parallel()
	llm := newFakeLLM(t, append(todoScript(), todoScript()...)...)
	s := startService(t, serveOptions{Env: llm.Env()})

	sse := querySSE(t, t.Context(), s.URL, "", "alice", "c1", "add buy milk to my todos")
	if sse.Status != http.StatusOK {
		t.Fatalf("POST /query: %d %v", sse.Status, sse.Body)
	}
	checkTodoRun(t, sse.Events, "alice", "c1")

	conn := dialWS(t, s.URL, "")
	sendWS(t, conn, map[string]string{"user_id": "alice", "conversation_id": "c2", "query_id": "q-c2", "query": "add buy milk to my todos"})
	ws := readWS(t, conn, "q-c2", 60*time.Second)
	checkTodoRun(t, ws, "alice", "c2")

	if a, b := shape(t, sse.Events), shape(t, ws); !reflect.DeepEqual(a, b) {
		t.Errorf("SSE and WebSocket envelopes differ:\nSSE: %q\nWS:  %q", a, b)
	}
	if got := llm.Overruns(); got != 0 {
		t.Errorf("the model was asked %d times more than scripted", got)
	}

	// What the model saw: the functions offered and the decision context.
	reqs := llm.Requests()
	if len(reqs) != 6 {
		t.Fatalf("%d model requests, want 6", len(reqs))
	}
	if reqs[0].Path != "/v1/chat/completions" || reqs[0].Model != "scripted" {
		t.Errorf("first request: path %q model %q", reqs[0].Path, reqs[0].Model)
	}
	if got, want := reqs[0].FunctionNames(), []string{"text_response", "mcp_todo"}; !reflect.DeepEqual(got, want) {
		t.Errorf("functions offered first = %v, want %v (cited_summarize is unavailable without results)", got, want)
	}
	dc := reqs[0].Context(t)
	if dc["user_prompt"] != "add buy milk to my todos" || dc["tree_count"] != "1/5" {
		t.Errorf("first decision context: user_prompt %v tree_count %v", dc["user_prompt"], dc["tree_count"])
	}
	dc = reqs[1].Context(t)
	env, _ := dc["environment"].(map[string]any)
	if _, ok := env["mcp_todo"]; !ok {
		t.Errorf("second decision context lacks the list result in its environment: %v", dc["environment"])
	}
	if got := reqs[1].FunctionNames(); !reflect.DeepEqual(got, []string{"text_response", "cited_summarize", "mcp_todo"}) {
		t.Errorf("functions offered after a result = %v", got)
	}

	if got := listTodos(t, s.URL, ""); strings.Count(got, "Buy milk") < 2 {
		t.Errorf("list_todos after two runs does not show Buy milk twice: %s", got)
	}
}

// runSSE runs one query over SSE and fails unless it streamed.
func runSSE(t *testing.T, s *serviceProc, user, conv, query string) []envelope {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	res := querySSE(t, ctx, s.URL, "", user, conv, query)
	if res.Status != http.StatusOK {
		t.Fatalf("POST /query/%s/%s: %d %v", user, conv, res.Status, res.Body)
	}
	if len(res.Events) == 0 || res.Events[len(res.Events)-1].Type != "completed" {
		t.Fatalf("run did not end with completed: %v", types(res.Events))
	}
	return res.Events
}

func lastText(t testing.TB, evs []envelope) string {
	t.Helper()
	texts := ofType(evs, "text")
	if len(texts) == 0 {
		t.Fatalf("no text event in %v", types(evs))
	}
	p := texts[len(texts)-1].payload(t)
	objs, _ := p["objects"].([]any)
	var b strings.Builder
	for _, o := range objs {
		m, _ := o.(map[string]any)
		fmt.Fprint(&b, m["text"])
	}
	return b.String()
}

// TestModelMistakesHeal covers a model that names a missing tool, sends
// invalid JSON arguments, or sends inputs that break the tool's schema:
// each run recovers and completes.
func TestModelMistakesHeal(t *testing.T) {
	t.Parallel()
	llm := newFakeLLM(t)
	s := startService(t, serveOptions{Env: llm.Env()})

	t.Run("missing tool", func(t *testing.T) {
		llm.Push(call("mcp_nope", map[string]any{}), call("mcp_nope", map[string]any{}),
			call("mcp_nope", map[string]any{}), call("mcp_nope", map[string]any{}),
			answer("Sorry, I have no such tool."))
		evs := runSSE(t, s, "alice", "missing", "use the nope tool")
		if got := lastText(t, evs); got != "Sorry, I have no such tool." {
			t.Errorf("forced answer = %q", got)
		}
		if hasType(evs, "error") {
			t.Errorf("error event in %v", types(evs))
		}
		reqs := llm.Requests()
		last := reqs[len(reqs)-1]
		if got := last.FunctionNames(); !reflect.DeepEqual(got, []string{"text_response"}) {
			t.Errorf("forced answer offered %v, want only text_response", got)
		}
		retry := reqs[len(reqs)-2]
		if m := retry.Messages[len(retry.Messages)-1]; m.Role != "user" || !strings.Contains(m.Content, `"mcp_nope" is not an option`) {
			t.Errorf("retry feedback = %+v", m)
		}
	})

	t.Run("invalid JSON arguments", func(t *testing.T) {
		llm.Push(reply{Tool: "mcp_todo", Args: `{"action": "list"`}, call("mcp_todo", map[string]any{"action": "list"}),
			answer("The todo server has 5 tools."))
		evs := runSSE(t, s, "alice", "badjson", "what can the todo server do?")
		if got := lastText(t, evs); got != "The todo server has 5 tools." {
			t.Errorf("answer = %q", got)
		}
		if !hasType(evs, "result") {
			t.Errorf("no list result after the healed call: %v", types(evs))
		}
		reqs := llm.Requests()
		retry := reqs[len(reqs)-2]
		if m := retry.Messages[len(retry.Messages)-1]; !strings.Contains(m.Content, "invalid JSON") {
			t.Errorf("retry feedback = %+v", m)
		}
	})

	t.Run("inputs break the schema", func(t *testing.T) {
		llm.Push(call("mcp_todo", map[string]any{"action": "execute", "tool_name": "create_todo", "tool_inputs": map[string]any{"priority": 9}}),
			call("mcp_todo", map[string]any{"action": "execute", "tool_name": "create_todo", "tool_inputs": map[string]any{"title": "Fixed", "priority": 5}}),
			answer("Added 'Fixed'."))
		evs := runSSE(t, s, "alice", "schema", "add fixed")
		she := ofType(evs, "self_healing_error")
		if len(she) != 1 {
			t.Fatalf("self_healing_error events: %d in %v", len(she), types(evs))
		}
		p := she[0].payload(t)
		if p["error_message"] != "invalid tool_inputs for create_todo" {
			t.Errorf("error_message = %q", p["error_message"])
		}
		fb, _ := p["feedback"].(string)
		if !strings.Contains(fb, "/priority") || !strings.Contains(fb, "title") {
			t.Errorf("feedback %q does not name /priority and title", fb)
		}
		reqs := llm.Requests()
		dc := reqs[len(reqs)-2].Context(t)
		prev, _ := dc["previous_errors"].([]any)
		if len(prev) != 1 {
			t.Errorf("previous_errors after the schema error = %v", dc["previous_errors"])
		}
		if got := lastText(t, evs); got != "Added 'Fixed'." {
			t.Errorf("answer = %q", got)
		}
		if got := listTodos(t, s.URL, ""); !strings.Contains(got, "Fixed") {
			t.Errorf("todo not stored after healing: %s", got)
		}
	})
	if got := llm.Overruns(); got != 0 {
		t.Errorf("the model was asked %d times more than scripted", got)
	}
}

// TestOfflinePlanner runs the offline planner (no model configured) on the
// todo server and on server-everything.
func TestOfflinePlanner(t *testing.T) {
	t.Parallel()
	t.Run("todo", func(t *testing.T) {
		t.Parallel()
		s := startService(t, serveOptions{})
		evs := runSSE(t, s, "alice", "c1", `create a todo titled "Buy milk" with priority=2`)
		got := lastText(t, evs)
		if !strings.HasPrefix(got, "[offline planner]") {
			t.Errorf("answer %q does not start with [offline planner]", got)
		}
		var decisions []any
		for _, e := range ofType(evs, "tree_update") {
			decisions = append(decisions, e.payload(t)["decision"])
		}
		if len(decisions) < 3 || decisions[0] != "mcp_todo" || decisions[1] != "mcp_todo" {
			t.Errorf("decisions = %v, want mcp_todo (list), mcp_todo (execute), ...", decisions)
		}
		if todos := listTodos(t, s.URL, ""); !strings.Contains(todos, "Buy milk") {
			t.Errorf("the offline planner did not create the todo: %s", todos)
		}
	})
	t.Run("server-everything", func(t *testing.T) {
		t.Parallel()
		cfg := fmt.Sprintf(`{"servers": {"everything": {"command": "node", "args": [%q, "stdio"]}}}`, testenv.Everything(t))
		s := startService(t, serveOptions{Config: cfg})
		evs := runSSE(t, s, "alice", "c1", `echo message="hi"`)
		got := lastText(t, evs)
		if !strings.HasPrefix(got, "[offline planner]") || !strings.Contains(got, "hi") {
			t.Errorf("answer = %q, want an offline planner answer containing hi", got)
		}
	})
}
