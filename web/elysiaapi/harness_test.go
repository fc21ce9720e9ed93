package elysiaapi

import (
	"context"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/elysia-go/elysia/persist"
	"github.com/elysia-go/elysia/tree"
	"github.com/elysia-go/elysia/web"
	"github.com/elysia-go/elysia/web/internal/webtest"
)

func TestMain(m *testing.M) {
	gin.SetMode(gin.TestMode)
	os.Exit(m.Run())
}

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
	trees, ps, _ := webtest.RealTrees(tb)
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
	return webtest.Do(tb, h.srv.Handler(), method, path, body, headers...)
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
