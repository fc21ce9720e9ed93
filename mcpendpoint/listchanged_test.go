package mcpendpoint

import (
	"context"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// listsNotifier is a notifier that also tells src's listeners when a
// server's resources or prompts change, as discovery does.
type listsNotifier struct{ notifier }

func (n listsNotifier) ObserveLists(server string) { n.ObserveTools(server) }

// TestUpstreamPromptChangeReachesClients: a server that adds a prompt (and
// says so with prompts/list_changed, its tools unchanged) makes the
// endpoint send prompts/list_changed to an open session.
func TestUpstreamPromptChangeReachesClients(t *testing.T) {
	up := mcpserver.NewMCPServer("up", "1", mcpserver.WithPromptCapabilities(true))
	prompt := func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return mcp.NewGetPromptResult("p", []mcp.PromptMessage{mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("hi"))}), nil
	}
	up.AddPrompt(mcp.NewPrompt("first"), prompt)
	up.AddTool(mcp.NewTool("tool"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("1"), nil
	})
	hs := httptest.NewServer(mcpserver.NewStreamableHTTPServer(up, mcpserver.WithDisableLocalhostProtection(true)))
	t.Cleanup(hs.Close)
	c, prompts := listening(t, hs.URL+"/mcp", func(src *source) mcpgateway.Observer { return listsNotifier{notifier{src}} },
		mcp.MethodNotificationPromptsListChanged)
	listedNames(t, c) // the first listing of tools is announced, prompts' list_changed last
	select {
	case <-prompts:
	case <-time.After(5 * time.Second):
		t.Fatal("no list_changed after the first listing")
	}
	up.AddPrompt(mcp.NewPrompt("second"), prompt) // mcp-go sends prompts/list_changed
	select {
	case <-prompts:
	case <-time.After(5 * time.Second):
		t.Fatal("no notifications/prompts/list_changed after the upstream added a prompt")
	}
	res, err := c.ListPrompts(t.Context(), mcp.ListPromptsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Prompts) != 2 {
		t.Errorf("prompts/list after the change = %v, want first and second", res.Prompts)
	}
}

// listening runs an Endpoint (Run, 50 ms debounce) over one server, "up"
// at url, whose gateway's Observer observer makes from the source. It
// returns a client connected with its GET stream open, and the channel
// that gets a value for each notification of method the client receives.
func listening(t *testing.T, url string, observer func(*source) mcpgateway.Observer, method mcp.MCPMethod) (*mcpclient.Client, <-chan struct{}) {
	t.Helper()
	src := &source{expose: mcpconfig.DefaultExpose()}
	g := mcpgateway.New(mcpconfig.ServerConfig{Name: "up", Transport: mcpconfig.TransportHTTP, URL: url, Enabled: true,
		ConnectTimeout: 5 * time.Second, CallTimeout: 5 * time.Second}, &mcpgateway.Options{Observer: observer(src)})
	t.Cleanup(func() { _ = g.Close() })
	src.gws = []*mcpgateway.Gateway{g}
	ep := New(src, &Options{Debounce: 50 * time.Millisecond})
	ep.changed() // the baseline, before any listing: the first one is then a change
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); ep.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	//lint:ignore SA1019 the GET stream of the protocol the endpoint serves (2025-11-25)
	c, err := mcpclient.NewStreamableHttpClient(serve(t, ep)+"/mcp", mcptransport.WithContinuousListening()) //nolint:staticcheck // see above
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan struct{}, 16)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(method) {
			got <- struct{}{}
		}
	})
	connect(t, c)
	return c, got
}

// catalogSource is a source that, as discovery does, tells the channels
// given to NotifyCatalog only of changes of the catalogue, and those given
// to Notify of calls too; it counts the endpoint's reads of its servers.
type catalogSource struct {
	*source
	reads   atomic.Int64
	catalog map[chan<- struct{}]bool // guarded by source.mu
}

var _ CatalogNotifier = (*catalogSource)(nil)

func (s *catalogSource) Upstreams() []Upstream {
	s.reads.Add(1)
	return s.source.Upstreams()
}

func (s *catalogSource) NotifyCatalog(c chan<- struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.catalog[c] = true
}

func (s *catalogSource) Stop(c chan<- struct{}) {
	s.source.Stop(c)
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.catalog, c)
}

// tell signals the Notify channels, and with catalog the NotifyCatalog
// ones too; it reports whether any channel was waiting for it.
func (s *catalogSource) tell(catalog bool) (listened bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	send := func(cs map[chan<- struct{}]bool) {
		for c := range cs {
			listened = true
			select {
			case c <- struct{}{}:
			default:
			}
		}
	}
	send(s.listeners)
	if catalog {
		send(s.catalog)
	}
	return listened
}

// TestRunLooksAgainOnlyForCatalogChanges: with a source that tells
// catalogue changes apart (CatalogNotifier, discovery), a call — after
// which the source tells its Notify channels — does not make Run read the
// servers to fingerprint them again; a change of the catalogue does.
func TestRunLooksAgainOnlyForCatalogChanges(t *testing.T) {
	src := &catalogSource{source: &source{expose: mcpconfig.DefaultExpose(),
		gws: []*mcpgateway.Gateway{gateway(t, "up", upstream(t, "echo"))}}, catalog: map[chan<- struct{}]bool{}}
	ep := New(src, &Options{Debounce: 10 * time.Millisecond})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); ep.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	deadline := time.Now().Add(10 * time.Second)
	for !src.tell(true) { // until Run listens
		if time.Now().After(deadline) {
			t.Fatal("Run never listened for catalogue changes")
		}
		time.Sleep(time.Millisecond)
	}
	waitReads := func(n int64) {
		t.Helper()
		for src.reads.Load() < n {
			if time.Now().After(deadline) {
				t.Fatalf("Run read the servers %d times, want at least %d", src.reads.Load(), n)
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitReads(4) // the baseline, and the first change
	before := src.reads.Load()
	for range 50 {
		src.tell(false) // a call
		time.Sleep(100 * time.Microsecond)
	}
	src.tell(true) // a change, which Run takes after whatever came before it
	waitReads(before + 2)
	time.Sleep(10 * time.Millisecond)
	if n := src.reads.Load() - before; n != 2 {
		t.Errorf("50 calls and a change made Run read the servers %d times; want 2 (the change's fingerprints)", n)
	}
}
