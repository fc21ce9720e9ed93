package signin

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/elysia-go/elysia/internal/testenv"
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

// signInHarness is a web.Server with the sign-in routes over f, whose
// /api/servers shows the todo server as each user sees it.
type signInHarness struct {
	srv  *web.Server
	f    *fakeSignIns
	logs *testenv.SyncBuffer
}

// newSignInHarness returns a harness; opts may be nil.
func newSignInHarness(t *testing.T, opts *web.Options) signInHarness {
	t.Helper()
	var o web.Options
	if opts != nil {
		o = *opts
	}
	h := signInHarness{f: newFakeSignIns(), logs: &testenv.SyncBuffer{}}
	o.Logger = slog.New(slog.NewJSONHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	o.Routes = []web.RouteSet{Routes(Deps{SignIns: h.f, Secrets: h.f})}
	h.srv = web.New(web.Deps{Trees: tree.NewManager(nil), Servers: userServers{f: h.f}}, &o)
	return h
}

// do serves one request through the handler. headers are name, value
// pairs.
func (h signInHarness) do(tb testing.TB, method, path, body string, headers ...string) *httptest.ResponseRecorder {
	tb.Helper()
	return webtest.Do(tb, h.srv.Handler(), method, path, body, headers...)
}

// userServers shows the todo server, which needs a sign-in until the
// user has a token.
type userServers struct {
	f *fakeSignIns
}

func (u userServers) Servers(context.Context) (web.ServersStatus, error) {
	return web.ServersStatus{ConfigFile: "mcp.json", Servers: []web.ServerStatus{{
		Name: "todo", ToolName: "mcp_todo", Transport: "streamable-http", Enabled: true, State: "connected",
	}}}, nil
}

func (u userServers) ServersFor(ctx context.Context, user string) (web.ServersStatus, error) {
	st, err := u.Servers(ctx)
	if u.f.token("todo", user) == "" {
		st.Servers[0].State = "needs_sign_in"
	}
	return st, err
}

func (userServers) List(context.Context, string, web.ListRequest) (web.ToolPage, error) {
	return web.ToolPage{}, tree.ErrNotFound
}

func (userServers) Execute(context.Context, string, string, map[string]any) (web.ExecuteResult, error) {
	return web.ExecuteResult{}, tree.ErrNotFound
}
