package web

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/elysia-go/elysia/internal/testenv"
	"github.com/elysia-go/elysia/persist"
	"github.com/elysia-go/elysia/store"
	"github.com/elysia-go/elysia/tree"
	"github.com/elysia-go/elysia/web/internal/webtest"
)

func TestMain(m *testing.M) {
	gin.SetMode(gin.TestMode)
	os.Exit(m.Run())
}

type harness struct {
	srv     *Server
	trees   *tree.Manager
	store   *persist.Store
	db      *store.Store
	servers *spyServers
	reg     *prometheus.Registry
	logs    *testenv.SyncBuffer
}

var testAssets = fstest.MapFS{
	"index.html": {Data: []byte("<!doctype html><title>Elysia</title><script src=\"/ui/app.js\"></script>")},
	"app.js":     {Data: []byte("console.log('elysia');\n")},
	"style.css":  {Data: []byte("body{}\n")},
}

// newHarness returns a Server over a real tree.Manager and a real SQLite
// store (see realTrees), a fake Runner and fake Servers. opts may be nil;
// its Logger, Registry, Assets, Model and ConfigFile are filled in when
// unset.
func newHarness(tb testing.TB, opts *Options) *harness {
	tb.Helper()
	h := &harness{servers: &spyServers{}, reg: prometheus.NewRegistry(), logs: &testenv.SyncBuffer{}}
	h.trees, h.store, h.db = webtest.RealTrees(tb)
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewJSONHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	if o.Registry == nil {
		o.Registry = h.reg
	}
	if o.Assets == nil {
		o.Assets = testAssets
	}
	if o.Model == (ModelInfo{}) {
		o.Model = ModelInfo{Provider: "offline", Model: "offline-planner"}
	}
	if o.ConfigFile == "" {
		o.ConfigFile = "mcp.json"
	}
	h.srv = New(Deps{Trees: h.trees, Servers: h.servers, Store: h.store, Feedback: h.store, Configs: h.store}, &o)
	return h
}

// do serves one request through the handler. headers are name, value
// pairs.
func (h *harness) do(tb testing.TB, method, path, body string, headers ...string) *httptest.ResponseRecorder {
	tb.Helper()
	return webtest.Do(tb, h.srv.Handler(), method, path, body, headers...)
}

// checkGolden compares a JSON response's status and body with
// testdata/<name>.golden, or rewrites it with -update.
func checkGolden(t *testing.T, name string, rec *httptest.ResponseRecorder) {
	t.Helper()
	testenv.GoldenResponse(t, filepath.Join("testdata", name+".golden"), rec.Code, rec.Body.Bytes(), stableTimes)
}

func TestRoutes(t *testing.T) {
	tests := []struct {
		name, method, path, body string
		wantStatus               int
	}{
		{"tree_get", "GET", "/tree/alice/c1", "", 200},
		{"tree_get_empty_user_id", "GET", "/tree//c1", "", 400},
		{"tree_get_conversation_id_not_utf8", "GET", "/tree/alice/c%FF1", "", 400},
		{"conversation_get_control_character", "GET", "/conversations/alice/c%0A1", "", 400},
		{"init_user", "POST", "/init/user/alice", "", 200},
		{"init_tree", "POST", "/init/tree/alice/c1", `{"low_memory": true, "branch_initialisation": "multi_branch"}`, 200},
		{"init_tree_no_body", "POST", "/init/tree/alice/c1", "", 200},
		{"init_tree_bad_mode", "POST", "/init/tree/alice/c1", `{"branch_initialisation": "two_branch"}`, 422},
		{"init_tree_bad_json", "POST", "/init/tree/alice/c1", `{"low_memory": false, "bra`, 400},
		{"init_tree_wrong_type", "POST", "/init/tree/alice/c1", `{"low_memory": "yes"}`, 400},
		{"tools_available", "GET", "/tools/available", "", 200},
		{"tools_remove", "POST", "/tools/alice/remove", `{"tool_name": "mcp_todo", "branch_id": "base"}`, 200},
		{"tools_add", "POST", "/tools/alice/add", `{"tool_name": "mcp_todo", "branch_id": "base", "from_tool_ids": []}`, 200},
		{"tools_add_missing_tool_name", "POST", "/tools/alice/add", `{"branch_id": "base"}`, 400},
		{"tools_add_unknown_tool", "POST", "/tools/alice/add", `{"tool_name": "nope", "branch_id": "base"}`, 404},
		{"tools_add_no_body", "POST", "/tools/alice/add", "", 400},
		{"tools_add_bad_conversation_id", "POST", "/tools/alice/add", `{"tool_name": "mcp_todo", "conversation_id": "a/b"}`, 400},
		{"tools_add_branch", "POST", "/tools/alice/add_branch", `{"id": "search", "instruction": "Pick a search tool.", "description": "Searching", "from_branch_id": "base"}`, 200},
		{"tools_add_branch_missing_id", "POST", "/tools/alice/add_branch", `{"instruction": "x"}`, 400},
		{"tools_remove_branch", "POST", "/tools/alice/remove_branch", `{"id": "search"}`, 200},
		{"tools_remove_branch_missing", "POST", "/tools/alice/remove_branch", `{"id": "missing"}`, 404},
		{"conversations_list", "GET", "/conversations/alice", "", 200},
		{"conversations_list_empty", "GET", "/conversations/nobody", "", 200},
		{"conversation_get", "GET", "/conversations/alice/c1", "", 200},
		{"conversation_get_missing", "GET", "/conversations/alice/c9", "", 404},
		{"conversation_delete", "DELETE", "/conversations/alice/c1", "", 200},
		{"conversation_delete_missing", "DELETE", "/conversations/alice/c9", "", 404},
		{"servers", "GET", "/api/servers", "", 200},
		{"server_list", "POST", "/api/servers/todo/list", "", 200},
		{"server_list_by_tool_name", "POST", "/api/servers/mcp_todo/list", "", 200},
		{"server_list_query", "POST", "/api/servers/todo/list", `{"query": "create"}`, 200},
		{"server_list_bad_cursor", "POST", "/api/servers/todo/list", `{"cursor": "x"}`, 422},
		{"server_list_bad_body", "POST", "/api/servers/todo/list", `{"query": 1}`, 400},
		{"server_list_unknown", "POST", "/api/servers/nope/list", "", 404},
		{"server_list_failure", "POST", "/api/servers/broken/list", "", 502},
		{"server_execute", "POST", "/api/servers/todo/execute", `{"tool_name": "create_todo", "tool_inputs": {"title": "Buy milk", "priority": 2}}`, 200},
		{"server_execute_invalid_args", "POST", "/api/servers/todo/execute", `{"tool_name": "create_todo", "tool_inputs": {"priority": 9}}`, 422},
		{"server_execute_unknown_tool", "POST", "/api/servers/todo/execute", `{"tool_name": "create_tood"}`, 422},
		{"server_execute_unknown_server", "POST", "/api/servers/nope/execute", `{"tool_name": "create_todo"}`, 404},
		{"server_execute_missing_tool_name", "POST", "/api/servers/todo/execute", `{"tool_inputs": {}}`, 400},
		{"server_execute_inputs_not_object", "POST", "/api/servers/todo/execute", `{"tool_name": "create_todo", "tool_inputs": [1]}`, 400},
		{"healthz", "GET", "/healthz", "", 200},
		{"healthz_head", "HEAD", "/healthz", "", 200},
		{"readyz_head", "HEAD", "/readyz", "", 200},
		{"readyz", "GET", "/readyz", "", 200},
		{"no_route", "GET", "/nope", "", 404},
		{"method_not_allowed", "PUT", "/healthz", "", 405},
	}
	h := newHarness(t, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := h.do(t, tt.method, tt.path, tt.body)
			if rec.Code != tt.wantStatus {
				t.Errorf("status = %d, want %d; body %s", rec.Code, tt.wantStatus, rec.Body)
			}
			if got := rec.Header().Get("Content-Type"); !strings.HasPrefix(got, "application/json") {
				t.Errorf("Content-Type = %q, want JSON", got)
			}
			checkGolden(t, tt.name, rec)
		})
	}
}

func TestIDs(t *testing.T) {
	tests := []struct {
		name, id string
		wantErr  string
	}{
		{"uuid", "0b5b2a4e-3c7d-4f7e-9a51-6f1d2c3b4a59", ""},
		{"spaces and punctuation", "my chat: 2026-11-22 (v2)", ""},
		{"dots", "..", ""},
		{"unicode", "café ✓ 会話", ""},
		{"at the limit", strings.Repeat("x", maxIDBytes), ""},
		{"empty", "", "conversation_id must not be empty"},
		{"over the limit", strings.Repeat("x", maxIDBytes+1), "conversation_id is too long (257 bytes, limit 256)"},
		{"invalid UTF-8", "c\xff1", "conversation_id is not valid UTF-8"},
		{"NUL", "c\x001", "conversation_id contains a control character"},
		{"newline", "c\n1", "conversation_id contains a control character"},
		{"DEL", "c\x7f1", "conversation_id contains a control character"},
		{"slash", "a/b", `conversation_id contains "/", which no path segment can hold`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkID("conversation_id", tt.id)
			got := ""
			if err != nil {
				got = err.Error()
				if status := statusOf(err); status != http.StatusBadRequest {
					t.Errorf("status %d, want 400", status)
				}
			}
			if got != tt.wantErr {
				t.Errorf("checkID(%q) = %q, want %q", tt.id, got, tt.wantErr)
			}
		})
	}
}

func TestPathIDsEchoedAsGiven(t *testing.T) {
	h := newHarness(t, nil)
	// Valid ids with characters that need escaping in a path come back
	// exactly as given.
	rec := h.do(t, "GET", "/tree/alice/caf%C3%A9%20%E2%9C%93:1", "")
	var body struct {
		ConversationID string `json:"conversation_id"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || rec.Code != 200 {
		t.Fatalf("status %d, %v: %s", rec.Code, err, rec.Body)
	}
	if body.ConversationID != "café ✓:1" {
		t.Errorf("conversation_id = %q, want %q", body.ConversationID, "café ✓:1")
	}
	// Every route with ids in its path checks them.
	for _, r := range []struct{ method, path string }{
		{"GET", "/tree/alice/c%001"},
		{"POST", "/init/user/a%0Ab"},
		{"POST", "/init/tree/alice/c%FF"},
		{"POST", "/tools/a%00/add"},
		{"GET", "/conversations/%FF"},
		{"GET", "/conversations/alice/c%00"},
		{"DELETE", "/conversations//c1"},
	} {
		if rec := h.do(t, r.method, r.path, ""); rec.Code != http.StatusBadRequest {
			t.Errorf("%s %s: status %d, want 400: %s", r.method, r.path, rec.Code, rec.Body)
		}
	}
}

// TestTreeOpDecoded checks that a tool operation reaches the conversation it
// names, and only it, and that remove_branch takes Elysia's "id" or
// "branch_id" as a fallback.
func TestTreeOpDecoded(t *testing.T) {
	h := newHarness(t, nil)
	ctx := t.Context()
	rec := h.do(t, "POST", "/tools/alice/add_branch", `{"id": "search", "description": "Searching", "instruction": "Pick.", "conversation_id": "c2"}`)
	if rec.Code != 200 {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	options := func(conv string) []string {
		c, err := h.trees.Conversation(ctx, "alice", conv)
		if err != nil {
			t.Fatal(err)
		}
		return c.Tree().Root().OptionIDs()
	}
	if got := options("c2"); !slices.Contains(got, "search") {
		t.Errorf("c2's root after add_branch = %v, want search in it", got)
	}
	if got := options("c1"); slices.Contains(got, "search") {
		t.Errorf("c1's root after add_branch to c2 = %v, want no search", got)
	}
	rec = h.do(t, "POST", "/tools/alice/remove_branch", `{"branch_id": "search", "conversation_id": "c2"}`)
	if rec.Code != 200 {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	if got := options("c2"); slices.Contains(got, "search") {
		t.Errorf("c2's root after remove_branch = %v", got)
	}
}

// TestInternalErrorDetailOnlyInLog breaks the database under a request: the
// client gets a generic message with the request id, the log the detail.
func TestInternalErrorDetailOnlyInLog(t *testing.T) {
	h := newHarness(t, nil)
	if err := h.db.Close(); err != nil {
		t.Fatal(err)
	}
	rec := h.do(t, "GET", "/tree/alice/c9", "")
	if rec.Code != http.StatusInternalServerError {
		t.Fatalf("status %d, want 500: %s", rec.Code, rec.Body)
	}
	checkGolden(t, "tree_get_internal_error", rec)
	if strings.Contains(rec.Body.String(), store.ErrClosed.Error()) {
		t.Errorf("5xx body leaks the detail: %s", rec.Body)
	}
	if !strings.Contains(rec.Body.String(), webtest.RequestID) {
		t.Errorf("5xx body lacks the request id: %s", rec.Body)
	}
	logs := h.logs.String()
	if !strings.Contains(logs, store.ErrClosed.Error()) || !strings.Contains(logs, `"request_id":"`+webtest.RequestID+`"`) {
		t.Errorf("log lacks the detail or the request id:\n%s", logs)
	}
}

func TestReadyzNotReady(t *testing.T) {
	h := newHarness(t, &Options{Ready: func(context.Context) error { return errors.New("store: dial tcp: refused") }})
	rec := h.do(t, "GET", "/readyz", "")
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("status = %d", rec.Code)
	}
	checkGolden(t, "readyz_not_ready", rec)
}

func TestRequestID(t *testing.T) {
	h := newHarness(t, nil)
	rec := h.do(t, "GET", "/healthz", "")
	if got := rec.Header().Get(requestIDHeader); got != webtest.RequestID {
		t.Errorf("X-Request-ID = %q, want the request's %q", got, webtest.RequestID)
	}
	for _, bad := range []string{"", "has space", strings.Repeat("a", 200), "new\nline"} {
		rec := h.do(t, "GET", "/healthz", "", requestIDHeader, bad)
		got := rec.Header().Get(requestIDHeader)
		if got == bad || !validRequestID(got) {
			t.Errorf("X-Request-ID for %q = %q, want a generated id", bad, got)
		}
	}
	if !strings.Contains(h.logs.String(), `"request_id":"`+webtest.RequestID+`"`) {
		t.Errorf("access log lacks the request id")
	}
}

func TestUIPage(t *testing.T) {
	h := newHarness(t, nil)
	const browser = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
	rec := h.do(t, "GET", "/tree/alice/c1", "", "Accept", browser)
	if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") {
		t.Fatalf("browser GET /tree: %d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	if rec.Header().Get("Vary") != "Accept" {
		t.Errorf("Vary = %q, want Accept", rec.Header().Get("Vary"))
	}
	rec = h.do(t, "GET", "/tree/alice/c1", "", "Accept", "*/*")
	if !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") || rec.Header().Get("Vary") != "Accept" {
		t.Errorf("fetch GET /tree: %q, Vary %q", rec.Header().Get("Content-Type"), rec.Header().Get("Vary"))
	}
	for path, want := range map[string]string{"/ui/app.js": "javascript", "/ui/style.css": "text/css"} {
		rec := h.do(t, "GET", path, "")
		if rec.Code != 200 || !strings.Contains(rec.Header().Get("Content-Type"), want) {
			t.Errorf("GET %s: %d %q, want 200 %s", path, rec.Code, rec.Header().Get("Content-Type"), want)
		}
	}
	for _, path := range []string{"/ui/missing.js", "/ui/", "/ui/index.html", "/ui/../server.go"} {
		if rec := h.do(t, "GET", path, ""); rec.Code != 404 {
			t.Errorf("GET %s: %d, want 404", path, rec.Code)
		}
	}
}

func TestEmbeddedUIByDefault(t *testing.T) {
	srv := New(Deps{Trees: tree.NewManager(nil), Servers: fakeServers{}}, &Options{Keys: testKeys})
	for _, path := range []string{"/tree/alice/c1", "/ui/app.js", "/ui/style.css"} {
		req := httptest.NewRequestWithContext(t.Context(), "GET", path, nil)
		req.Header.Set("Accept", "text/html,*/*;q=0.8")
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		if rec.Code != 200 || rec.Body.Len() == 0 {
			t.Errorf("GET %s without a key: %d, %d bytes", path, rec.Code, rec.Body.Len())
		}
	}
}

func TestPrefersHTML(t *testing.T) {
	tests := map[string]bool{
		"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8": true,
		"*/*":                               false,
		"":                                  false,
		"application/json":                  false,
		"application/json, text/html":       false,
		"text/html;q=0.5, application/json": false,
		"TEXT/HTML":                         true,
	}
	for accept, want := range tests {
		if got := prefersHTML(accept); got != want {
			t.Errorf("prefersHTML(%q) = %v, want %v", accept, got, want)
		}
	}
}

func TestNewPanicsOnNilDependency(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("New with a nil dependency did not panic")
		}
	}()
	New(Deps{}, nil)
}

// TestBodiesAsInTheAppendix compares raw bytes, not decoded JSON: "error"
// comes first as in DESIGN.md's examples, and "<=" is not escaped.
func TestBodiesAsInTheAppendix(t *testing.T) {
	h := newHarness(t, nil)
	tests := []struct {
		method, path, body string
		wantStatus         int
		want               string // the body, or its prefix when it ends in "…"
	}{
		{"POST", "/api/servers/todo/execute", `{"tool_name": "create_todo", "tool_inputs": {"priority": 9}}`, 422,
			`{"error":"invalid tool_inputs for create_todo: missing property 'title'; /priority: must be <= 5","result":null}`},
		{"GET", "/api/servers", "", 200, `{"error":"","config_file":"mcp.json","config_error":"","servers":…`},
		{"POST", "/init/user/alice", "", 200, `{"error":"","user_exists":…`},
		{"GET", "/conversations/alice", "", 200, `{"error":"","conversations":…`},
		{"GET", "/healthz", "", 200, `{"error":"","status":"ok"}`},
		{"GET", "/conversations/alice/nope", "", 404, `{"error":…`},
	}
	for _, tt := range tests {
		rec := h.do(t, tt.method, tt.path, tt.body)
		got := rec.Body.String()
		prefix, isPrefix := strings.CutSuffix(tt.want, "…")
		if rec.Code != tt.wantStatus || (isPrefix && !strings.HasPrefix(got, prefix)) || (!isPrefix && got != tt.want) {
			t.Errorf("%s %s = %d %s\nwant %d %s", tt.method, tt.path, rec.Code, got, tt.wantStatus, tt.want)
		}
	}
}

// stableTimes replaces every non-empty "updated_at" in a decoded body with
// a placeholder: the store stamps saves with the clock.
func stableTimes(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && k == "updated_at" && s != "" {
				v[k] = "<time>"
				continue
			}
			stableTimes(x)
		}
	case []any:
		for _, x := range v {
			stableTimes(x)
		}
	}
}

func TestStreamWriteTimeoutDefault(t *testing.T) {
	for _, d := range []time.Duration{0, -1} {
		h := newHarness(t, &Options{StreamWriteTimeout: d})
		if got := h.srv.writeTimeout; got != DefaultStreamWriteTimeout {
			t.Errorf("StreamWriteTimeout %v: timeout %v, want %v", d, got, DefaultStreamWriteTimeout)
		}
	}
}

// startServer serves h on a real listener on 127.0.0.1 until the test ends.
func startServer(t *testing.T, h *harness) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(h.srv.Handler())
	t.Cleanup(ts.Close)
	return ts
}
