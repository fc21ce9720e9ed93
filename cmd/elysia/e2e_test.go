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
func (e envelope) payload(tb testing.TB) map[string]any {
	tb.Helper()
	var m map[string]any
	if err := json.Unmarshal(e.Payload, &m); err != nil {
		tb.Fatalf("%s payload: %v: %s", e.Type, err, e.Payload)
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
func querySSE(tb testing.TB, ctx context.Context, base, key, user, conv, query string) sseResult {
	tb.Helper()
	b, _ := json.Marshal(map[string]string{"query": query, "query_id": "q-" + conv})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/query/"+user+"/"+conv, bytes.NewReader(b))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatalf("POST /query/%s/%s: %v", user, conv, err)
	}
	defer func() { _ = resp.Body.Close() }() // a read error shows up while scanning
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
			tb.Fatalf("SSE data is not an envelope: %v: %s", err, data)
		}
		res.Events = append(res.Events, e)
	}
	if err := sc.Err(); err != nil && ctx.Err() == nil {
		tb.Fatalf("reading the event stream: %v", err)
	}
	return res
}

// dialWS opens /ws/query, offering the key as a bearer subprotocol.
func dialWS(tb testing.TB, base, key string) *websocket.Conn {
	tb.Helper()
	ctx, cancel := context.WithTimeout(tb.Context(), 10*time.Second)
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
		tb.Fatalf("dial /ws/query: %v (status %d)", err, status)
	}
	conn.SetReadLimit(8 << 20)
	tb.Cleanup(func() { _ = conn.CloseNow() }) // best effort: the test may have closed it
	return conn
}

// sendWS sends one query message.
func sendWS(tb testing.TB, conn *websocket.Conn, msg map[string]string) {
	tb.Helper()
	b, _ := json.Marshal(msg)
	ctx, cancel := context.WithTimeout(tb.Context(), 10*time.Second)
	defer cancel()
	if err := conn.Write(ctx, websocket.MessageText, b); err != nil {
		tb.Fatalf("websocket write: %v", err)
	}
}

// readWS reads envelopes until one of query queryID is completed or an
// error event arrives (an error for a refused query is its last event).
func readWS(tb testing.TB, conn *websocket.Conn, queryID string, timeout time.Duration) []envelope {
	tb.Helper()
	ctx, cancel := context.WithTimeout(tb.Context(), timeout)
	defer cancel()
	var out []envelope
	for {
		_, data, err := conn.Read(ctx)
		if err != nil {
			tb.Fatalf("websocket read after %v: %v", types(out), err)
		}
		var e envelope
		if err := json.Unmarshal(data, &e); err != nil {
			tb.Fatalf("websocket message is not an envelope: %v: %s", err, data)
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
func listTodos(tb testing.TB, base, key string) string {
	tb.Helper()
	code, body := do(tb, http.MethodPost, base+"/api/servers/todo/execute", key,
		map[string]any{"tool_name": "list_todos", "tool_inputs": map[string]any{}})
	if code != http.StatusOK {
		tb.Fatalf("execute list_todos: %d %v", code, body)
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
	// Every decision's tree_update goes out before the events it caused:
	// list (status, result), execute (status, result), then the answer.
	rest := got
	if rest[0] == "title" {
		rest = rest[1:]
	}
	want := []string{"tree_update", "status", "result", "tree_update", "status", "result", "tree_update", "status", "text", "completed"}
	if !reflect.DeepEqual(rest, want) {
		t.Errorf("events %v, want [title] %v", got, want)
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
func shape(tb testing.TB, evs []envelope) []string {
	tb.Helper()
	out := make([]string, len(evs))
	for i, e := range evs {
		p := e.payload(tb)
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

func lastText(tb testing.TB, evs []envelope) string {
	tb.Helper()
	texts := ofType(evs, "text")
	if len(texts) == 0 {
		tb.Fatalf("no text event in %v", types(evs))
	}
	p := texts[len(texts)-1].payload(tb)
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

// TestBusyConversation holds one run open in the model and sends a second
// query to the same conversation: after the wait (30 s) SSE answers 409
// and the WebSocket an error event. Both wait at once.
func TestBusyConversation(t *testing.T) {
	t.Parallel()
	hold := make(chan struct{})
	llm := newFakeLLM(t, reply{Tool: "text_response", Args: `{"text": "first done"}`, Hold: hold})
	s := startService(t, serveOptions{Env: llm.Env()})

	first := make(chan sseResult, 1)
	go func() { first <- querySSE(t, t.Context(), s.URL, "", "alice", "busy", "first") }()
	testenv.WaitFor(t, 30*time.Second, "the first run to reach the model", func() bool { return llm.Waiting() == 1 })

	second := make(chan sseResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
		defer cancel()
		second <- querySSE(t, ctx, s.URL, "", "alice", "busy", "second")
	}()
	conn := dialWS(t, s.URL, "")
	sendWS(t, conn, map[string]string{"user_id": "alice", "conversation_id": "busy", "query_id": "q-ws", "query": "third"})
	ws := readWS(t, conn, "q-ws", 90*time.Second)

	if got := types(ws); !reflect.DeepEqual(got, []string{"error"}) {
		t.Errorf("WebSocket query on a busy conversation: events %v, want [error]", got)
	} else if txt, _ := ws[0].payload(t)["text"].(string); !strings.Contains(txt, "busy") {
		t.Errorf("error event text = %q, want it to say the conversation is busy", txt)
	}
	// SSE refuses with 409: nothing, not even a heartbeat, is streamed
	// while a query waits for its conversation.
	res := <-second
	if res.Status != http.StatusConflict {
		t.Errorf("SSE query on a busy conversation: status %d %v, want 409", res.Status, res.Body)
	} else if e, _ := res.Body["error"].(string); !strings.Contains(e, "busy") {
		t.Errorf("409 body = %v", res.Body)
	}

	close(hold)
	r1 := <-first
	if r1.Status != http.StatusOK || len(r1.Events) == 0 || r1.Events[len(r1.Events)-1].Type != "completed" {
		t.Fatalf("first run: %d %v", r1.Status, types(r1.Events))
	}
	if got := lastText(t, r1.Events); got != "first done" {
		t.Errorf("first answer = %q", got)
	}
	if n := len(llm.Requests()); n != 1 {
		t.Errorf("the refused queries reached the model: %d requests", n)
	}
}

// TestDisconnectCancelsTheRun closes the client while the model is
// thinking: the model request is cancelled, the service keeps serving, and
// the next query of the same conversation runs at once.
func TestDisconnectCancelsTheRun(t *testing.T) {
	t.Parallel()
	llm := newFakeLLM(t)
	s := startService(t, serveOptions{Env: llm.Env()})

	t.Run("SSE", func(t *testing.T) {
		llm.Push(reply{Tool: "text_response", Args: `{"text": "never sent"}`, Hold: make(chan struct{})})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan sseResult, 1)
		go func() { done <- querySSE(t, ctx, s.URL, "", "alice", "gone", "slow question") }()
		testenv.WaitFor(t, 30*time.Second, "the run to reach the model", func() bool { return llm.Waiting() == 1 })
		cancel()
		<-done
		testenv.WaitFor(t, 10*time.Second, "the model request to be cancelled", func() bool { return llm.Cancelled() == 1 })

		llm.Push(answer("second answer"))
		start := time.Now()
		evs := runSSE(t, s, "alice", "gone", "next question")
		if got := lastText(t, evs); got != "second answer" {
			t.Errorf("answer after a disconnect = %q", got)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("the next query waited %v: the cancelled run kept the conversation", d)
		}
	})

	t.Run("WebSocket", func(t *testing.T) {
		llm.Push(reply{Tool: "text_response", Args: `{"text": "never sent"}`, Hold: make(chan struct{})})
		conn := dialWS(t, s.URL, "")
		sendWS(t, conn, map[string]string{"user_id": "alice", "conversation_id": "gone-ws", "query_id": "q1", "query": "slow"})
		testenv.WaitFor(t, 30*time.Second, "the run to reach the model", func() bool { return llm.Waiting() == 1 })
		_ = conn.CloseNow() // the abrupt close is the point; its effect is checked next
		testenv.WaitFor(t, 10*time.Second, "the model request to be cancelled", func() bool { return llm.Cancelled() == 2 })

		llm.Push(answer("after the socket closed"))
		conn2 := dialWS(t, s.URL, "")
		sendWS(t, conn2, map[string]string{"user_id": "alice", "conversation_id": "gone-ws", "query_id": "q2", "query": "again"})
		evs := readWS(t, conn2, "q2", 15*time.Second)
		if got := lastText(t, evs); got != "after the socket closed" {
			t.Errorf("answer after a closed socket = %q", got)
		}
	})
	if code, _ := do(t, http.MethodGet, s.URL+"/healthz", "", nil); code != http.StatusOK {
		t.Errorf("/healthz after disconnects: %d", code)
	}
}

// rawDo sends a request with a raw body and headers and returns the status,
// headers and body as sent.
func rawDo(tb testing.TB, method, url, key string, body []byte, hdr map[string]string) (int, http.Header, []byte) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(tb.Context(), 60*time.Second)
	defer cancel()
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		tb.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, url, err)
	}
	defer func() { _ = resp.Body.Close() }() // read to the end below
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

// objectKeys returns the keys of the JSON object at path (a list of keys)
// inside raw, in the order they were sent.
func objectKeys(tb testing.TB, raw []byte, path ...string) []string {
	tb.Helper()
	var cur json.RawMessage = raw
	for _, p := range path {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(cur, &m); err != nil {
			tb.Fatalf("%v at %q: %s", err, p, cur)
		}
		cur = m[p]
	}
	dec := json.NewDecoder(bytes.NewReader(cur))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		tb.Fatalf("not an object at %v: %.200s", path, cur)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			tb.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			tb.Fatal(err)
		}
	}
	return keys
}

// get walks a decoded JSON value along keys.
func get(v any, keys ...string) any {
	for _, k := range keys {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	return v
}

// wantStatus checks a JSON answer's status and its "error" field: "" on
// success, a message otherwise.
func wantStatus(tb testing.TB, what string, code int, body map[string]any, want int) {
	tb.Helper()
	if code != want {
		tb.Errorf("%s: status %d, want %d (%v)", what, code, want, body)
		return
	}
	e, ok := body["error"].(string)
	switch {
	case !ok:
		tb.Errorf("%s: no string error field in %v", what, body)
	case want < 300 && e != "":
		tb.Errorf("%s: error %q on success", what, e)
	case want >= 300 && e == "":
		tb.Errorf("%s: empty error with status %d", what, code)
	}
}

// TestEveryRoute calls each HTTP route of the real service once, checking
// status codes and the error field.
func TestEveryRoute(t *testing.T) {
	t.Parallel()
	llm := newFakeLLM(t, answer("Hello."))
	s := startService(t, serveOptions{Env: llm.Env()})
	u := s.URL

	// GET /tree: JSON, and the UI page for a browser.
	code, hdr, raw := rawDo(t, http.MethodGet, u+"/tree/alice/c1", "", nil, map[string]string{"Accept": "application/json"})
	var tree map[string]any
	_ = json.Unmarshal(raw, &tree)
	wantStatus(t, "GET /tree", code, tree, http.StatusOK)
	if tree["conversation_id"] != "c1" || get(tree, "tree", "id") != "base" || get(tree, "tree", "name") != "Base" {
		t.Errorf("GET /tree body = %.300s", raw)
	}
	if got, want := objectKeys(t, raw, "tree"), []string{"name", "id", "description", "instruction", "reasoning", "branch", "options"}; !reflect.DeepEqual(got, want) {
		t.Errorf("tree keys = %v, want %v", got, want)
	}
	if got, want := objectKeys(t, raw, "tree", "options"), []string{"text_response", "cited_summarize", "mcp_todo"}; !reflect.DeepEqual(got, want) {
		t.Errorf("root options = %v, want %v", got, want)
	}
	if d, _ := get(tree, "tree", "options", "mcp_todo", "description").(string); !strings.HasPrefix(d, "MCP server 'todo' (stdio) - provides access to multiple tools") {
		t.Errorf("mcp_todo description = %q", d)
	}
	if !strings.Contains(hdr.Get("Vary"), "Accept") {
		t.Errorf("GET /tree JSON: Vary = %q", hdr.Get("Vary"))
	}
	code, hdr, raw = rawDo(t, http.MethodGet, u+"/tree/alice/c1", "", nil, map[string]string{"Accept": "text/html,application/xhtml+xml"})
	if code != http.StatusOK || !strings.HasPrefix(hdr.Get("Content-Type"), "text/html") || !strings.Contains(hdr.Get("Vary"), "Accept") ||
		!strings.Contains(strings.ToLower(string(raw)), "<html") {
		t.Errorf("GET /tree as a browser: %d %q Vary %q %.100s", code, hdr.Get("Content-Type"), hdr.Get("Vary"), raw)
	}
	code, hdr, _ = rawDo(t, http.MethodGet, u+"/ui/app.js", "", nil, nil)
	if code != http.StatusOK || !strings.Contains(hdr.Get("Content-Type"), "javascript") {
		t.Errorf("GET /ui/app.js: %d %q", code, hdr.Get("Content-Type"))
	}

	// POST /init/user.
	code, body := do(t, http.MethodPost, u+"/init/user/newbie", "", nil)
	wantStatus(t, "POST /init/user", code, body, http.StatusOK)
	if body["user_exists"] != false || get(body, "config", "branch_initialisation") == nil {
		t.Errorf("first POST /init/user = %v", body)
	}
	code, body = do(t, http.MethodPost, u+"/init/user/newbie", "", nil)
	if code != http.StatusOK || body["user_exists"] != true {
		t.Errorf("second POST /init/user = %d %v", code, body)
	}

	// POST /init/tree: multi_branch puts the gateways on branch "mcp".
	code, raw2 := func() (int, []byte) {
		b, _ := json.Marshal(map[string]any{"low_memory": false, "branch_initialisation": "multi_branch"})
		c, _, r := rawDo(t, http.MethodPost, u+"/init/tree/alice/multi", "", b, nil)
		return c, r
	}()
	_ = json.Unmarshal(raw2, &body)
	wantStatus(t, "POST /init/tree multi_branch", code, body, http.StatusOK)
	if got, want := objectKeys(t, raw2, "tree", "options"), []string{"text_response", "cited_summarize", "mcp"}; !reflect.DeepEqual(got, want) {
		t.Errorf("multi_branch root options = %v, want %v", got, want)
	}
	if get(body, "tree", "options", "mcp", "branch") != true || get(body, "tree", "options", "mcp", "options", "mcp_todo", "id") != "mcp_todo" {
		t.Errorf("multi_branch: branch mcp does not hold mcp_todo: %v", get(body, "tree", "options", "mcp"))
	}
	code, body = do(t, http.MethodPost, u+"/init/tree/alice/multi", "", map[string]any{"branch_initialisation": "nine_branch"})
	wantStatus(t, "POST /init/tree unknown mode", code, body, http.StatusUnprocessableEntity)

	// GET /tools/available.
	code, _, raw = rawDo(t, http.MethodGet, u+"/tools/available", "", nil, nil)
	_ = json.Unmarshal(raw, &body)
	wantStatus(t, "GET /tools/available", code, body, http.StatusOK)
	for _, name := range []string{"text_response", "cited_summarize", "mcp_todo"} {
		if get(body, "tools", name, "name") != name {
			t.Errorf("/tools/available lacks %s: %v", name, get(body, "tools", name))
		}
	}
	if got, want := objectKeys(t, raw, "tools"), []string{"text_response", "cited_summarize", "mcp_todo"}; !reflect.DeepEqual(got, want) {
		t.Errorf("/tools/available order = %v, want %v (built-ins, then gateways)", got, want)
	}
	if got, want := objectKeys(t, raw, "tools", "mcp_todo", "inputs"), []string{"action", "tool_name", "tool_inputs", "query", "uri", "name", "arguments"}; !reflect.DeepEqual(got, want) {
		t.Errorf("mcp_todo inputs = %v, want %v", got, want)
	}
	if get(body, "tools", "text_response", "end") != true || get(body, "tools", "mcp_todo", "end") != false {
		t.Errorf("end flags: text_response %v, mcp_todo %v", get(body, "tools", "text_response", "end"), get(body, "tools", "mcp_todo", "end"))
	}

	// POST /tools/alice/add|remove|add_branch|remove_branch on one conversation.
	code, body = do(t, http.MethodPost, u+"/tools/alice/add_branch", "", map[string]any{
		"conversation_id": "c1", "id": "extra", "description": "Extra tools", "instruction": "Pick an extra tool."})
	wantStatus(t, "add_branch", code, body, http.StatusOK)
	if get(body, "tree", "options", "extra", "branch") != true {
		t.Errorf("add_branch: no branch extra in %v", get(body, "tree", "options"))
	}
	// DESIGN.md's example: adding mcp_todo where discovery put it changes
	// nothing and succeeds.
	code, body = do(t, http.MethodPost, u+"/tools/alice/add", "", map[string]any{
		"conversation_id": "c1", "tool_name": "mcp_todo", "branch_id": "base", "from_tool_ids": []string{}})
	wantStatus(t, "add a tool where it is", code, body, http.StatusOK)
	if get(body, "tree", "options", "mcp_todo", "id") != "mcp_todo" {
		t.Errorf("add a tool where it is: mcp_todo not on the root: %v", get(body, "tree", "options"))
	}
	// Tool names are unique in a tree: move mcp_todo from the root to extra.
	code, body = do(t, http.MethodPost, u+"/tools/alice/add", "", map[string]any{
		"conversation_id": "c1", "tool_name": "mcp_todo", "branch_id": "extra", "from_tool_ids": []string{}})
	wantStatus(t, "add a tool the tree holds", code, body, http.StatusUnprocessableEntity)
	code, body = do(t, http.MethodPost, u+"/tools/alice/remove", "", map[string]any{
		"conversation_id": "c1", "tool_name": "mcp_todo", "branch_id": "base"})
	wantStatus(t, "remove from the root", code, body, http.StatusOK)
	if get(body, "tree", "options", "mcp_todo") != nil {
		t.Errorf("remove: mcp_todo still on the root")
	}
	code, body = do(t, http.MethodPost, u+"/tools/alice/add", "", map[string]any{
		"conversation_id": "c1", "tool_name": "mcp_todo", "branch_id": "extra", "from_tool_ids": []string{}})
	wantStatus(t, "add", code, body, http.StatusOK)
	if get(body, "tree", "options", "extra", "options", "mcp_todo", "id") != "mcp_todo" {
		t.Errorf("add: mcp_todo not on extra: %v", get(body, "tree", "options", "extra"))
	}
	code, body = do(t, http.MethodPost, u+"/tools/alice/remove", "", map[string]any{
		"conversation_id": "c1", "tool_name": "mcp_todo", "branch_id": "extra"})
	wantStatus(t, "remove", code, body, http.StatusOK)
	if get(body, "tree", "options", "extra", "options", "mcp_todo") != nil {
		t.Errorf("remove: mcp_todo still on extra")
	}
	code, body = do(t, http.MethodPost, u+"/tools/alice/remove_branch", "", map[string]any{"conversation_id": "c1", "id": "extra"})
	wantStatus(t, "remove_branch", code, body, http.StatusOK)
	if get(body, "tree", "options", "extra") != nil {
		t.Errorf("remove_branch: extra still there")
	}
	code, body = do(t, http.MethodPost, u+"/tools/alice/add", "", map[string]any{"conversation_id": "c1", "tool_name": "no_such_tool"})
	if code != http.StatusNotFound && code != http.StatusUnprocessableEntity {
		t.Errorf("add an unknown tool: %d %v", code, body)
	} else {
		wantStatus(t, "add an unknown tool", code, body, code)
	}
	code, body = do(t, http.MethodPost, u+"/tools/alice/add_branch", "", map[string]any{"conversation_id": "c1"})
	wantStatus(t, "add_branch without id", code, body, http.StatusBadRequest)

	// The MCP server routes.
	code, body = do(t, http.MethodGet, u+"/api/servers", "", nil)
	wantStatus(t, "GET /api/servers", code, body, http.StatusOK)
	servers, _ := body["servers"].([]any)
	if len(servers) != 1 || body["config_error"] != "" || !strings.HasSuffix(fmt.Sprint(body["config_file"]), "mcp.json") {
		t.Fatalf("GET /api/servers = %v", body)
	}
	code, body = do(t, http.MethodPost, u+"/api/servers/todo/list", "", nil)
	wantStatus(t, "list", code, body, http.StatusOK)
	if tl, _ := get(body, "result", "tools").([]any); len(tl) != 5 || get(body, "result", "server") != "todo" {
		t.Errorf("list result = %v", body["result"])
	}
	code, body = do(t, http.MethodPost, u+"/api/servers/mcp_todo/list", "", nil)
	wantStatus(t, "list by tool name", code, body, http.StatusOK)
	code, body = do(t, http.MethodPost, u+"/api/servers/todo/list", "", map[string]any{"query": "search text"})
	wantStatus(t, "list with a query", code, body, http.StatusOK)
	if tl, _ := get(body, "result", "tools").([]any); len(tl) == 0 || get(tl[0], "name") != "search_todos" {
		t.Errorf("list with query 'search text' = %v, want search_todos first", get(body, "result", "tools"))
	}
	code, body = do(t, http.MethodPost, u+"/api/servers/todo/list", "", map[string]any{"cursor": "nope"})
	wantStatus(t, "list with a bad cursor", code, body, http.StatusUnprocessableEntity)
	code, body = do(t, http.MethodGet, u+"/api/servers", "", nil)
	wantStatus(t, "servers", code, body, http.StatusOK)
	srv, _ := body["servers"].([]any)[0].(map[string]any)
	wantSrv := map[string]any{"name": "todo", "tool_name": "mcp_todo", "transport": "stdio", "enabled": true,
		"state": "connected", "tool_count": 5.0, "last_error": "", "failures": 0.0, "command": testenv.TodoMCP(t)}
	for k, v := range wantSrv {
		if srv[k] != v {
			t.Errorf("/api/servers %s = %v, want %v", k, srv[k], v)
		}
	}
	if got := fmt.Sprint(srv["tools"]); got != "[create_todo list_todos update_todo search_todos delete_todo]" {
		t.Errorf("/api/servers tools = %v", got)
	}
	if get(srv, "circuit", "state") != "closed" || get(srv, "env", "TODO_DB") != "***" {
		t.Errorf("/api/servers circuit %v env %v", srv["circuit"], srv["env"])
	}

	code, body = do(t, http.MethodPost, u+"/api/servers/todo/execute", "", map[string]any{
		"tool_name": "create_todo", "tool_inputs": map[string]any{"title": "From the API", "priority": 1}})
	wantStatus(t, "execute create_todo", code, body, http.StatusOK)
	if get(body, "result", "is_error") != false || get(body, "result", "structured", "todo", "title") != "From the API" {
		t.Errorf("execute result = %v", body["result"])
	}
	code, body = do(t, http.MethodGet, u+"/api/servers", "", nil)
	wantStatus(t, "servers after execute", code, body, http.StatusOK)
	if calls := get(body, "servers"); fmt.Sprint(get(calls.([]any)[0], "calls")) == "0" {
		t.Errorf("/api/servers calls = 0 after an execute")
	}
	b, _ := json.Marshal(map[string]any{"tool_name": "create_todo", "tool_inputs": map[string]any{"priority": 9}})
	code, _, raw = rawDo(t, http.MethodPost, u+"/api/servers/todo/execute", "", b, nil)
	var got422 map[string]any
	_ = json.Unmarshal(raw, &got422)
	want422 := map[string]any{"error": "invalid tool_inputs for create_todo: missing property 'title'; /priority: must be <= 5", "result": nil}
	if code != http.StatusUnprocessableEntity || !reflect.DeepEqual(got422, want422) {
		t.Errorf("execute with bad inputs: %d %s, want 422 %v", code, raw, want422)
	}
	code, body = do(t, http.MethodPost, u+"/api/servers/todo/execute", "", map[string]any{"tool_name": "create_todos", "tool_inputs": map[string]any{}})
	wantStatus(t, "execute an unknown tool", code, body, http.StatusUnprocessableEntity)
	if e, _ := body["error"].(string); !strings.Contains(e, "list_todos") || !strings.Contains(e, "create_todo") || !strings.Contains(strings.ToLower(e), "did you mean") && !strings.Contains(strings.ToLower(e), "closest") {
		t.Errorf("unknown tool error %q does not list the tools and the closest match", e)
	}
	code, body = do(t, http.MethodPost, u+"/api/servers/nope/list", "", nil)
	wantStatus(t, "list an unknown server", code, body, http.StatusNotFound)
	code, body = do(t, http.MethodPost, u+"/api/servers/nope/execute", "", map[string]any{"tool_name": "x"})
	wantStatus(t, "execute on an unknown server", code, body, http.StatusNotFound)
	code, body = do(t, http.MethodPost, u+"/api/servers/todo/execute", "", map[string]any{"tool_inputs": map[string]any{}})
	wantStatus(t, "execute without tool_name", code, body, http.StatusBadRequest)

	// Conversations: one query saves c2; list, get, delete.
	runSSE(t, s, "alice", "c2", "say hello")
	code, body = do(t, http.MethodGet, u+"/conversations/alice", "", nil)
	wantStatus(t, "GET /conversations", code, body, http.StatusOK)
	found := false
	for _, c := range body["conversations"].([]any) {
		if get(c, "conversation_id") == "c2" {
			// DESIGN.md's form: RFC 3339, UTC, to the second.
			at, _ := get(c, "updated_at").(string)
			_, err := time.Parse("2006-01-02T15:04:05Z", at)
			found = get(c, "title") == "say hello" && err == nil
		}
	}
	if !found {
		t.Errorf("GET /conversations/alice lacks c2 titled \"say hello\": %v", body["conversations"])
	}
	code, body = do(t, http.MethodGet, u+"/conversations/nobody", "", nil)
	if wantStatus(t, "GET /conversations of a new user", code, body, http.StatusOK); fmt.Sprint(body["conversations"]) != "[]" {
		t.Errorf("conversations of a new user = %v", body["conversations"])
	}
	code, body = do(t, http.MethodGet, u+"/conversations/alice/c2", "", nil)
	wantStatus(t, "GET /conversations/alice/c2", code, body, http.StatusOK)
	if h, _ := get(body, "conversation", "history").([]any); len(h) != 2 || get(h[0], "content") != "say hello" || get(h[1], "content") != "Hello." {
		t.Errorf("history = %v", get(body, "conversation", "history"))
	}
	if ev, _ := get(body, "conversation", "events").([]any); len(ev) == 0 || get(ev[len(ev)-1], "type") != "completed" {
		t.Errorf("event log = %v", get(body, "conversation", "events"))
	}
	code, body = do(t, http.MethodDelete, u+"/conversations/alice/c2", "", nil)
	wantStatus(t, "DELETE /conversations/alice/c2", code, body, http.StatusOK)
	code, body = do(t, http.MethodGet, u+"/conversations/alice/c2", "", nil)
	wantStatus(t, "GET a deleted conversation", code, body, http.StatusNotFound)
	code, body = do(t, http.MethodDelete, u+"/conversations/alice/c2", "", nil)
	wantStatus(t, "DELETE a deleted conversation", code, body, http.StatusNotFound)

	// Health, readiness, metrics.
	code, body = do(t, http.MethodGet, u+"/healthz", "", nil)
	wantStatus(t, "/healthz", code, body, http.StatusOK)
	code, body = do(t, http.MethodGet, u+"/readyz", "", nil)
	wantStatus(t, "/readyz", code, body, http.StatusOK)
	code, _, raw = rawDo(t, http.MethodGet, u+"/metrics", "", nil, nil)
	if code != http.StatusOK || !strings.Contains(string(raw), "# TYPE") || !strings.Contains(string(raw), "go_goroutines") {
		t.Errorf("/metrics: %d %.200s", code, raw)
	}

	// Bad requests.
	code, _, raw = rawDo(t, http.MethodPost, u+"/init/tree/alice/c1", "", []byte(`{"branch_initialisation": `), nil)
	_ = json.Unmarshal(raw, &body)
	wantStatus(t, "bad JSON", code, body, http.StatusBadRequest)
	code, _, raw = rawDo(t, http.MethodPost, u+"/query/alice/c1", "", []byte(`{"query": 1}`), nil)
	_ = json.Unmarshal(raw, &body)
	wantStatus(t, "query of the wrong type", code, body, http.StatusBadRequest)
	big := append(append([]byte(`{"query": "`), bytes.Repeat([]byte("a"), 1<<20+10)...), `"}`...)
	code, _, raw = rawDo(t, http.MethodPost, u+"/query/alice/c1", "", big, nil)
	_ = json.Unmarshal(raw, &body)
	wantStatus(t, "body over 1 MiB", code, body, http.StatusRequestEntityTooLarge)
	code, body = do(t, http.MethodGet, u+"/no/such/route", "", nil)
	wantStatus(t, "unknown route", code, body, http.StatusNotFound)
	code, body = do(t, http.MethodPut, u+"/healthz", "", nil)
	wantStatus(t, "wrong method", code, body, http.StatusMethodNotAllowed)
}

// TestSecretsStayHidden configures a server env value from ${env:MY_SECRET}
// and checks the value appears in no API answer and nowhere in the log; a
// server whose ${input:} has no value is shown as failed while the todo
// server works.
func TestSecretsStayHidden(t *testing.T) {
	t.Parallel()
	const secret = "hunter2-very-secret"
	todo := testenv.TodoMCP(t)
	cfg := fmt.Sprintf(`{
  "inputs": [{"type": "promptString", "id": "locked_token", "description": "Token", "password": true}],
  "servers": {
    "todo": {"type": "stdio", "command": %q, "args": ["--token-hint", "${env:MY_SECRET}"], "env": {"TODO_DB": "./data/todos.db", "SECRET_TOKEN": "${env:MY_SECRET}"}},
    "locked": {"type": "stdio", "command": %q, "env": {"TOKEN": "${input:locked_token}"}}
  }
}`, todo, todo)
	// todo-mcp would reject an unknown flag; keep the secret in env only.
	cfg = strings.Replace(cfg, `"args": ["--token-hint", "${env:MY_SECRET}"], `, "", 1)
	llm := newFakeLLM(t, call("mcp_todo", map[string]any{"action": "list"}),
		call("mcp_todo", map[string]any{"action": "execute", "tool_name": "nope"}), answer("done"))
	s := startService(t, serveOptions{Config: cfg, Env: append(llm.Env(), "MY_SECRET="+secret)})
	var answers []string
	record := func(what string, code int, b []byte) {
		answers = append(answers, fmt.Sprintf("%s %d %s", what, code, b))
	}
	for _, r := range []struct{ method, path, body string }{
		{http.MethodGet, "/api/servers", ""},
		{http.MethodPost, "/api/servers/todo/list", ""},
		{http.MethodPost, "/api/servers/todo/execute", `{"tool_name": "create_todo", "tool_inputs": {"priority": 9}}`},
		{http.MethodPost, "/api/servers/todo/execute", `{"tool_name": "nope"}`},
		{http.MethodPost, "/api/servers/todo/execute", `{"tool_name": "create_todo", "tool_inputs": {"title": "secret test"}}`},
		{http.MethodPost, "/api/servers/locked/list", ""},
		{http.MethodPost, "/api/servers/locked/execute", `{"tool_name": "list_todos"}`},
		{http.MethodPost, "/init/user/alice", ""},
		{http.MethodGet, "/api/servers", ""},
	} {
		var body []byte
		if r.body != "" {
			body = []byte(r.body)
		}
		code, _, raw := rawDo(t, r.method, s.URL+r.path, "", body, nil)
		record(r.method+" "+r.path, code, raw)
	}
	evs := runSSE(t, s, "alice", "c1", "list the todo tools")
	for _, e := range evs {
		record("event "+e.Type, 200, e.Payload)
	}
	code, _, raw := rawDo(t, http.MethodGet, s.URL+"/conversations/alice/c1", "", nil, nil)
	record("GET /conversations/alice/c1", code, raw)

	for _, a := range answers {
		if strings.Contains(a, secret) {
			t.Errorf("the secret leaked in %.300s", a)
		}
	}
	if strings.Contains(s.Output(), secret) {
		t.Errorf("the secret is in the service's log output")
	}

	code, body := do(t, http.MethodGet, s.URL+"/api/servers", "", nil)
	wantStatus(t, "GET /api/servers", code, body, http.StatusOK)
	servers, _ := body["servers"].([]any)
	if len(servers) != 2 {
		t.Fatalf("servers = %v", servers)
	}
	todoSrv, locked := servers[0].(map[string]any), servers[1].(map[string]any)
	if get(todoSrv, "env", "SECRET_TOKEN") != "***" || get(todoSrv, "env", "TODO_DB") != "***" {
		t.Errorf("todo env = %v, want every value ***", todoSrv["env"])
	}
	if todoSrv["state"] != "connected" {
		t.Errorf("todo state = %v", todoSrv["state"])
	}
	if locked["state"] != "failed" {
		t.Errorf("locked server state = %v, want failed", locked["state"])
	}
	reason := fmt.Sprint(locked["last_error"], " ", locked["unresolved"])
	if !strings.Contains(reason, "locked_token") {
		t.Errorf("locked server reason %q does not name the input", reason)
	}
	t.Logf("unresolved input reason: %s", reason)
	code, body = do(t, http.MethodPost, s.URL+"/api/servers/locked/list", "", nil)
	wantStatus(t, "list on a server that cannot run", code, body, http.StatusServiceUnavailable)
	code, body = do(t, http.MethodPost, s.URL+"/api/servers/todo/execute", "", map[string]any{"tool_name": "list_todos"})
	wantStatus(t, "the todo server beside a failed one", code, body, http.StatusOK)
}
