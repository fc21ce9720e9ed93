// Package webtest holds what the tests of web and of the packages on top of
// it share: a tree.Manager over a real SQLite store with one saved
// conversation, DESIGN.md's event sequence, and a request helper. It
// imports no web package, so that web's own tests can use it too; only
// tests import it.
package webtest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/elysia-go/elysia/persist"
	"github.com/elysia-go/elysia/store"
	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/tree"
)

// Host is the Host of every test request unless a test sets another: a
// loopback one, which a service without keys answers.
const Host = "127.0.0.1:8000"

// RequestID is the X-Request-ID of every test request, so that 5xx bodies
// are stable.
const RequestID = "test-req-1"

// TodoGateway stands in for the gateway of the todo server in the tree:
// the routes only read its name, description and inputs.
type TodoGateway struct{}

var _ tools.Tool = TodoGateway{}

// Name implements tools.Tool.
func (TodoGateway) Name() string { return "mcp_todo" }

// Description implements tools.Tool.
func (TodoGateway) Description() string {
	return "MCP server 'todo' (stdio) - provides access to multiple tools"
}

// EndsRun implements tools.Tool.
func (TodoGateway) EndsRun() bool { return false }

// Inputs implements tools.Tool.
func (TodoGateway) Inputs() []tools.Input {
	return []tools.Input{{Name: "action", Type: "string", Description: "list or execute", Default: "list"}}
}

// Run implements tools.Tool; it never runs.
func (TodoGateway) Run(context.Context, tools.Call, tools.Emitter) (tools.Result, error) {
	return tools.Result{}, errors.New("TodoGateway does not run")
}

// RealTrees returns a tree.Manager with the todo gateway placed, over a
// fresh SQLite file, with alice's conversation c1 saved ("Todos", one
// exchange and the appendix's event log), and the stores under it.
func RealTrees(tb testing.TB) (*tree.Manager, *persist.Store, *store.Store) {
	tb.Helper()
	db, err := store.Open(tb.Context(), filepath.Join(tb.TempDir(), "elysia.db"), nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = db.Close() })
	ps := persist.New(db)
	m := tree.NewManager(&tree.Options{Store: ps, Locker: db, Profiles: ps, QueryWait: 50 * time.Millisecond})
	m.SetTools([]tree.Placement{{Tool: TodoGateway{}}})
	st := tree.ConversationState{UserID: "alice", ConversationID: "c1", Title: "Todos", InitMode: tree.OneBranch,
		History: []tree.Message{{Role: "user", Content: "hi"}, {Role: "assistant", Content: "Hello."}}}
	if err := ps.Save(tb.Context(), st, AppendixEnvelopes("alice", "c1", "q1")); err != nil {
		tb.Fatal(err)
	}
	return m, ps, db
}

// AppendixEnvelopes is DESIGN.md's list-then-execute event sequence, with
// fixed ids.
func AppendixEnvelopes(user, conv, query string) []tools.Envelope {
	raw := []struct {
		typ     tools.EventType
		id      string
		payload string
	}{
		{tools.EventStatus, "sta-1", `{"text":"Listing tools of todo..."}`},
		{tools.EventResult, "res-1", `{"type":"table","objects":[{"name":"create_todo","description":"...","inputs":{"type":"object"},"_REF_ID":"mcp_todo_list_0_0"}],"metadata":{"server":"todo","action":"list"}}`},
		{tools.EventTreeUpdate, "tre-1", `{"node":"base","tree_index":0,"decision":"mcp_todo","reasoning":"…","reset":true}`},
		{tools.EventSelfHealingError, "err-1", `{"feedback":"/priority: must be <= 5","error_message":"invalid tool_inputs for create_todo"}`},
		{tools.EventText, "tex-1", `{"type":"response","metadata":{},"objects":[{"text":"Added 'Buy milk'."}]}`},
		{tools.EventCompleted, "com-1", `{}`},
	}
	out := make([]tools.Envelope, len(raw))
	for i, r := range raw {
		out[i] = tools.Envelope{Type: r.typ, ID: r.id, UserID: user, ConversationID: conv, QueryID: query, Payload: json.RawMessage(r.payload)}
	}
	return out
}

// Do serves one request through h, with Host, RequestID and, for a body,
// Content-Type application/json. headers are name, value pairs: a "Host"
// pair sets the Host, an empty value removes the header.
func Do(tb testing.TB, h http.Handler, method, path, body string, headers ...string) *httptest.ResponseRecorder {
	tb.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := httptest.NewRequestWithContext(tb.Context(), method, path, r)
	req.Host = Host
	req.Header.Set("X-Request-ID", RequestID)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if strings.EqualFold(headers[i], "Host") {
			req.Host = headers[i+1]
			continue
		}
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
			continue
		}
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// CSPDirective returns the source list of the directive name of the
// Content-Security-Policy csp, and whether the policy has it.
func CSPDirective(csp, name string) (string, bool) {
	for d := range strings.SplitSeq(csp, ";") {
		k, v, _ := strings.Cut(strings.TrimSpace(d), " ")
		if k == name {
			return v, true
		}
	}
	return "", false
}
