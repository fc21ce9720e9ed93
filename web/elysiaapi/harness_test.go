package elysiaapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/elysia-go/elysia/persist"
	"github.com/elysia-go/elysia/store"
	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/tree"
	"github.com/elysia-go/elysia/web"
)

func TestMain(m *testing.M) {
	gin.SetMode(gin.TestMode)
	os.Exit(m.Run())
}

// testHost is the Host of every test request: a loopback one, which a
// service without keys answers.
const testHost = "127.0.0.1:8000"

// testKeys are the API keys of the tests with keys.
var testKeys = map[string]string{"key-alice": "alice", "key-bob": "bob", "key-admin": web.AdminUser}

// harness is a web.Server with these routes over a real tree.Manager and
// a real SQLite store holding alice's conversation c1 (see realTrees).
type harness struct {
	srv   *web.Server
	store *persist.Store
}

// newHarness returns a harness without a model; opts may be nil.
func newHarness(tb testing.TB, opts *web.Options) *harness {
	tb.Helper()
	return newHarnessModel(tb, opts, nil)
}

// newHarnessModel returns a harness whose follow-up suggestions come from
// model (nil: none).
func newHarnessModel(tb testing.TB, opts *web.Options, model web.TextModel) *harness {
	tb.Helper()
	trees, ps := realTrees(tb)
	var o web.Options
	if opts != nil {
		o = *opts
	}
	if o.Model == (web.ModelInfo{}) {
		o.Model = web.ModelInfo{Provider: "offline", Model: "offline-planner"}
	}
	if o.ConfigFile == "" {
		o.ConfigFile = "mcp.json"
	}
	o.Routes = []web.RouteSet{Routes}
	deps := web.Deps{Trees: trees, Servers: noServers{}, Store: ps, Feedback: ps, Configs: ps, Model: model}
	return &harness{srv: web.New(deps, &o), store: ps}
}

// do serves one request through the handler. headers are name, value
// pairs.
func (h *harness) do(tb testing.TB, method, path, body string, headers ...string) *httptest.ResponseRecorder {
	tb.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := httptest.NewRequestWithContext(tb.Context(), method, path, r)
	req.Host = testHost
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	h.srv.Handler().ServeHTTP(rec, req)
	return rec
}

// todoGateway stands in for the gateway of the todo server in the tree:
// the routes only read its name, description and inputs.
type todoGateway struct{}

func (todoGateway) Name() string { return "mcp_todo" }
func (todoGateway) Description() string {
	return "MCP server 'todo' (stdio) - provides access to multiple tools"
}
func (todoGateway) EndsRun() bool { return false }
func (todoGateway) Inputs() []tools.Input {
	return []tools.Input{{Name: "action", Type: "string", Description: "list or execute", Default: "list"}}
}
func (todoGateway) Run(context.Context, tools.Call, tools.Emitter) (tools.Result, error) {
	return tools.Result{}, errors.New("todoGateway does not run")
}

// realTrees returns a tree.Manager with the todo gateway placed, over a
// fresh SQLite file, with alice's conversation c1 saved ("Todos", one
// exchange and a list-then-execute event log).
func realTrees(tb testing.TB) (*tree.Manager, *persist.Store) {
	tb.Helper()
	db, err := store.Open(tb.Context(), filepath.Join(tb.TempDir(), "elysia.db"), nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = db.Close() })
	ps := persist.New(db)
	m := tree.NewManager(&tree.Options{Store: ps, Locker: db, Profiles: ps, QueryWait: 50 * time.Millisecond})
	m.SetTools([]tree.Placement{{Tool: todoGateway{}}})
	st := tree.ConversationState{UserID: "alice", ConversationID: "c1", Title: "Todos", InitMode: tree.OneBranch,
		History: []tree.Message{{Role: "user", Content: "hi"}, {Role: "assistant", Content: "Hello."}}}
	if err := ps.Save(tb.Context(), st, appendixEnvelopes("alice", "c1", "q1")); err != nil {
		tb.Fatal(err)
	}
	return m, ps
}

// appendixEnvelopes is DESIGN.md's list-then-execute event sequence, with
// fixed ids.
func appendixEnvelopes(user, conv, query string) []tools.Envelope {
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

// noServers is the Servers of a harness: these routes use no MCP server.
type noServers struct{}

func (noServers) Servers(context.Context) (web.ServersStatus, error) { return web.ServersStatus{}, nil }
func (noServers) List(_ context.Context, name string, _ web.ListRequest) (web.ToolPage, error) {
	return web.ToolPage{}, tree.ErrNotFound
}
func (noServers) Execute(context.Context, string, string, map[string]any) (web.ExecuteResult, error) {
	return web.ExecuteResult{}, tree.ErrNotFound
}
