package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/elysia-go/elysia/internal/testenv"
)

// everythingService starts the service with server-everything over stdio
// and a scripted model.
func everythingService(t *testing.T, llm *fakeLLM) *serviceProc {
	t.Helper()
	script := testenv.Everything(t)
	return startService(t, serveOptions{Env: llm.Env(),
		Config: fmt.Sprintf(`{"servers": {"everything": {"command": "node", "args": [%q, "stdio"], "sampling": true}}}`, script)})
}

// readUntil reads envelopes of query queryID until stop says so.
func readUntil(t *testing.T, conn *websocket.Conn, queryID string, stop func(envelope) bool) []envelope {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	var out []envelope
	for {
		_, data, err := conn.Read(ctx)
		if err != nil {
			t.Fatalf("websocket read after %v: %v", types(out), err)
		}
		var e envelope
		if err := json.Unmarshal(data, &e); err != nil {
			t.Fatal(err)
		}
		if e.QueryID != queryID && e.Type != "error" {
			continue
		}
		out = append(out, e)
		if stop(e) {
			return out
		}
	}
}

func sendJSON(t *testing.T, conn *websocket.Conn, msg any) {
	t.Helper()
	b, _ := json.Marshal(msg)
	if err := conn.Write(t.Context(), websocket.MessageText, b); err != nil {
		t.Fatal(err)
	}
}

// TestElicitationOverWebSocket: a server's question during alice's query
// reaches alice as an elicitation event; bob cannot answer it; alice's
// answer over the WebSocket, with the form's defaults filled in, reaches the
// server.
func TestElicitationOverWebSocket(t *testing.T) {
	t.Parallel()
	llm := newFakeLLM(t,
		call("mcp_everything", map[string]any{"action": "execute", "tool_name": "trigger-elicitation-request", "tool_inputs": map[string]any{}}),
		answer("thanks"))
	s := everythingService(t, llm)
	conn := dialWS(t, s.URL, "")
	sendWS(t, conn, map[string]string{"user_id": "alice", "conversation_id": "c1", "query_id": "q1", "query": "ask me"})
	evs := readUntil(t, conn, "q1", func(e envelope) bool { return e.Type == "elicitation" })
	p := evs[len(evs)-1].payload(t)
	id, _ := p["elicitation_id"].(string)
	if id == "" || p["server"] != "everything" || p["mode"] != "form" || p["requested_schema"] == nil {
		t.Fatalf("elicitation payload = %v", p)
	}

	code, body := do(t, http.MethodPost, s.URL+"/elicitations/"+id, "", map[string]any{"user_id": "bob", "action": "accept", "content": map[string]any{"name": "Bob"}})
	if code != http.StatusNotFound {
		t.Errorf("bob answering alice's question: %d %v, want 404", code, body)
	}
	code, body = do(t, http.MethodPost, s.URL+"/elicitations/"+id, "", map[string]any{"user_id": "alice", "action": "accept", "content": map[string]any{"integer": 1000}})
	if code != http.StatusUnprocessableEntity {
		t.Errorf("an answer the form refuses: %d %v, want 422", code, body)
	}

	sendJSON(t, conn, map[string]any{"type": "elicitation_response", "user_id": "alice", "elicitation_id": id,
		"action": "accept", "content": map[string]any{"name": "Ada Lovelace"}})
	evs = readUntil(t, conn, "q1", func(e envelope) bool { return e.Type == "completed" })
	var result string
	for _, e := range ofType(evs, "result") {
		result += string(e.Payload)
	}
	for _, want := range []string{"Ada Lovelace", "It was a dark and stormy night."} {
		if !strings.Contains(result, want) {
			t.Errorf("the result does not carry %q: %s", want, result)
		}
	}
}

// TestProgressAndStop: a long operation's progress arrives as status
// events carrying progress and total; a stop message ends the query at
// once, and the conversation takes the next query without waiting.
func TestProgressAndStop(t *testing.T) {
	t.Parallel()
	llm := newFakeLLM(t,
		call("mcp_everything", map[string]any{"action": "execute", "tool_name": "trigger-long-running-operation",
			"tool_inputs": map[string]any{"duration": 60, "steps": 120}}),
		answer("next one"))
	s := everythingService(t, llm)
	conn := dialWS(t, s.URL, "")
	sendWS(t, conn, map[string]string{"user_id": "alice", "conversation_id": "c1", "query_id": "q1", "query": "run long"})
	evs := readUntil(t, conn, "q1", func(e envelope) bool {
		return e.Type == "status" && strings.Contains(string(e.Payload), `"progress":2`)
	})
	p := evs[len(evs)-1].payload(t)
	if p["tool"] != "trigger-long-running-operation" || p["total"] != 120.0 {
		t.Errorf("progress payload = %v", p)
	}

	sendJSON(t, conn, map[string]any{"type": "stop", "user_id": "alice", "conversation_id": "c1", "query_id": "q1"})
	// The stopped query ends saying so, and the conversation is free.
	evs = readUntil(t, conn, "q1", func(e envelope) bool { return e.Type == "completed" || e.Type == "error" })
	if last := evs[len(evs)-1]; last.Type != "completed" || !strings.Contains(string(evs[len(evs)-2].Payload), "Stopped by the user.") {
		t.Errorf("the stopped query ended with %v", types(evs))
	}
	sendWS(t, conn, map[string]string{"user_id": "alice", "conversation_id": "c1", "query_id": "q2", "query": "and now"})
	evs = readWS(t, conn, "q2", 30*time.Second)
	if !hasType(evs, "text") || hasType(evs, "error") {
		t.Errorf("the next query after a stop: %v", types(evs))
	}
	code, body := do(t, http.MethodPost, s.URL+"/query/alice/c1/stop", "", map[string]any{"query_id": "q1"})
	if code != http.StatusNotFound {
		t.Errorf("stopping a query that ended: %d %v, want 404", code, body)
	}
}

// TestServerResourcesPromptsAndLogs: the routes for what a server offers
// beyond tools answer with the server's resources, prompts and log.
func TestServerResourcesPromptsAndLogs(t *testing.T) {
	t.Parallel()
	s := everythingService(t, newFakeLLM(t))
	code, body := do(t, http.MethodPost, s.URL+"/api/servers/everything/resources", "", nil)
	res, _ := body["resources"].([]any)
	if code != http.StatusOK || len(res) == 0 {
		t.Fatalf("resources: %d %v", code, body)
	}
	uri, _ := get(res[0], "uri").(string)
	code, body = do(t, http.MethodPost, s.URL+"/api/servers/everything/resources/read", "", map[string]any{"uri": uri})
	if code != http.StatusOK || !strings.Contains(fmt.Sprint(get(body, "result", "content")), uri) {
		t.Errorf("read %s: %d %v", uri, code, body)
	}
	code, body = do(t, http.MethodPost, s.URL+"/api/servers/everything/prompts", "", nil)
	prompts, _ := body["prompts"].([]any)
	if code != http.StatusOK || len(prompts) == 0 {
		t.Fatalf("prompts: %d %v", code, body)
	}
	code, body = do(t, http.MethodPost, s.URL+"/api/servers/everything/prompts/get", "", map[string]any{"name": get(prompts[0], "name")})
	if msgs, _ := body["messages"].([]any); code != http.StatusOK || len(msgs) == 0 {
		t.Errorf("get prompt: %d %v", code, body)
	}
	code, body = do(t, http.MethodPost, s.URL+"/api/servers/everything/resources/read", "", map[string]any{})
	if code != http.StatusBadRequest {
		t.Errorf("read without uri: %d %v, want 400", code, body)
	}
	code, body = do(t, http.MethodGet, s.URL+"/api/servers/everything/logs", "", nil)
	if _, isList := body["logs"].([]any); code != http.StatusOK || !isList {
		t.Errorf("logs: %d %v", code, body)
	}
	code, _ = do(t, http.MethodGet, s.URL+"/api/servers/nope/logs", "", nil)
	if code != http.StatusNotFound {
		t.Errorf("logs of an unknown server: %d, want 404", code)
	}
}

// TestElicitationAnswerByIDAlone: on a keyless service the unguessable id
// alone names a server's question: an answer without a user_id reaches it,
// and one whose user_id is not the question's user's is a 404.
func TestElicitationAnswerByIDAlone(t *testing.T) {
	t.Parallel()
	llm := newFakeLLM(t,
		call("mcp_everything", map[string]any{"action": "execute", "tool_name": "trigger-elicitation-request", "tool_inputs": map[string]any{}}),
		answer("thanks"))
	s := everythingService(t, llm)
	conn := dialWS(t, s.URL, "")
	sendWS(t, conn, map[string]string{"user_id": "alice", "conversation_id": "c1", "query_id": "q1", "query": "ask me"})
	evs := readUntil(t, conn, "q1", func(e envelope) bool { return e.Type == "elicitation" })
	id, _ := evs[len(evs)-1].payload(t)["elicitation_id"].(string)
	if id == "" {
		t.Fatalf("no elicitation id in %v", evs[len(evs)-1])
	}
	code, body := do(t, http.MethodPost, s.URL+"/elicitations/"+id, "", map[string]any{"user_id": "bob", "action": "accept", "content": map[string]any{"name": "Bob"}})
	if code != http.StatusNotFound {
		t.Errorf("an answer naming another user: %d %v, want 404", code, body)
	}
	code, body = do(t, http.MethodPost, s.URL+"/elicitations/"+id, "", map[string]any{"action": "accept", "content": map[string]any{"name": "Ada Lovelace"}})
	if code != http.StatusOK {
		t.Fatalf("an answer without user_id: %d %v, want 200", code, body)
	}
	evs = readUntil(t, conn, "q1", func(e envelope) bool { return e.Type == "completed" })
	var result string
	for _, e := range ofType(evs, "result") {
		result += string(e.Payload)
	}
	if !strings.Contains(result, "Ada Lovelace") {
		t.Errorf("the result does not carry the answer: %s", result)
	}
}
