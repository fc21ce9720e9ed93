package stream

import (
	"log/slog"
	"net/http/httptest"
	"os"
	"testing"
	"testing/fstest"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/elysia-go/elysia/internal/testenv"
	"github.com/elysia-go/elysia/persist"
	"github.com/elysia-go/elysia/store"
	"github.com/elysia-go/elysia/tree"
	"github.com/elysia-go/elysia/web"
	"github.com/elysia-go/elysia/web/internal/webtest"
)

func TestMain(m *testing.M) {
	gin.SetMode(gin.TestMode)
	os.Exit(m.Run())
}

// requestIDHeader carries the request id (web's X-Request-ID).
const requestIDHeader = "X-Request-ID"

// testKeys are the API keys of the tests with keys.
var testKeys = map[string]string{"key-alice": "alice", "key-bob": "bob", "key-admin": web.AdminUser}

// harness is a web.Server with the Streams' routes.
type harness struct {
	srv     *web.Server
	st      *Streams
	runner  *fakeRunner
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

// newHarness returns a Server with the Streams over a real tree.Manager
// and a real SQLite store (see realTrees), a fake Runner and fake Servers.
// opts may be nil; its Logger, Registry, Assets, Model and ConfigFile are
// filled in when unset, and the Streams' routes come first in its Routes.
func newHarness(tb testing.TB, opts *web.Options) *harness {
	tb.Helper()
	return newHarnessWith(tb, opts, Options{})
}

// newHarnessWith is newHarness with the Streams' options so; without a
// Runner, the harness's fakeRunner runs the queries.
func newHarnessWith(tb testing.TB, opts *web.Options, so Options) *harness {
	tb.Helper()
	h := &harness{runner: newFakeRunner(), servers: &spyServers{}, reg: prometheus.NewRegistry(), logs: &testenv.SyncBuffer{}}
	h.trees, h.store, h.db = webtest.RealTrees(tb)
	var o web.Options
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
	if o.Model == (web.ModelInfo{}) {
		o.Model = web.ModelInfo{Provider: "offline", Model: "offline-planner"}
	}
	if o.ConfigFile == "" {
		o.ConfigFile = "mcp.json"
	}
	if so.Runner == nil {
		so.Runner = h.runner
	}
	h.st = New(so)
	o.Routes = append([]web.RouteSet{h.st.Routes}, o.Routes...)
	h.srv = web.New(web.Deps{Trees: h.trees, Servers: h.servers, Store: h.store, Feedback: h.store, Configs: h.store}, &o)
	return h
}

// do serves one request through the handler. headers are name, value
// pairs.
func (h *harness) do(tb testing.TB, method, path, body string, headers ...string) *httptest.ResponseRecorder {
	tb.Helper()
	return webtest.Do(tb, h.srv.Handler(), method, path, body, headers...)
}
