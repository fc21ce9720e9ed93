package mcpendpoint

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// notifier is an mcpgateway.Observer that tells src's listeners when a
// server's tools change, as discovery does.
type notifier struct{ src *source }

func (n notifier) ObserveCall(string, string, string, time.Duration) {}
func (n notifier) ObserveCircuit(string, string)                     {}
func (n notifier) ObserveTools(string) {
	n.src.mu.Lock()
	defer n.src.mu.Unlock()
	for c := range n.src.listeners {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

// TestUpstreamToolChangeReachesClients: a server that adds a tool (and
// says so with list_changed) makes the endpoint send list_changed to an
// open session, whose next list has the tool.
func TestUpstreamToolChangeReachesClients(t *testing.T) {
	up := mcpserver.NewMCPServer("up", "1", mcpserver.WithToolCapabilities(true))
	up.AddTool(mcp.NewTool("first"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("1"), nil
	})
	hs := httptest.NewServer(mcpserver.NewStreamableHTTPServer(up, mcpserver.WithDisableLocalhostProtection(true)))
	t.Cleanup(hs.Close)
	c, changed := listening(t, hs.URL+"/mcp", func(src *source) mcpgateway.Observer { return notifier{src} },
		mcp.MethodNotificationToolsListChanged)
	if got := strings.Join(listedNames(t, c), ","); got != "up__first,ask" && got != "up__first" {
		t.Fatalf("tools/list = %s", got)
	}
	select { // the first listing is announced; this test wants the next one
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("no notifications/tools/list_changed after the first listing")
	}
	up.AddTool(mcp.NewTool("second"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("2"), nil
	})
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("no notifications/tools/list_changed after the upstream added a tool")
	}
	if got := strings.Join(listedNames(t, c), ","); !strings.Contains(got, "up__second") {
		t.Errorf("tools/list after the change = %s", got)
	}
}

// TestEndingASessionCancelsItsCalls: a client that ends its session
// (DELETE) while a call runs has the call cancelled upstream; another
// user's DELETE of that session changes nothing.
func TestEndingASessionCancelsItsCalls(t *testing.T) {
	up := mcpserver.NewMCPServer("up", "1")
	started, cancelled := make(chan struct{}, 1), make(chan struct{}, 1)
	up.AddTool(mcp.NewTool("wait"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		started <- struct{}{}
		<-ctx.Done()
		cancelled <- struct{}{}
		return nil, ctx.Err()
	})
	hs := httptest.NewServer(mcpserver.NewStreamableHTTPServer(up, mcpserver.WithDisableLocalhostProtection(true)))
	t.Cleanup(hs.Close)
	g := mcpgateway.New(mcpconfig.ServerConfig{Name: "up", Transport: mcpconfig.TransportHTTP, URL: hs.URL + "/mcp", Enabled: true,
		ConnectTimeout: 5 * time.Second, CallTimeout: time.Minute}, nil) // no timeout ends the call first
	t.Cleanup(func() { _ = g.Close() })
	src := &source{expose: mcpconfig.DefaultExpose(), gws: []*mcpgateway.Gateway{g}}
	base := serve(t, New(src, nil))
	c, err := mcpclient.NewStreamableHttpClient(base + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	connect(t, c)
	sid := c.GetTransport().(*mcptransport.StreamableHTTP).GetSessionId()
	go func() {
		req := mcp.CallToolRequest{}
		req.Params.Name = "up__wait"
		_, _ = c.CallTool(t.Context(), req) // ends with the session
	}()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the call never reached the server")
	}
	del := func(user string) int {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodDelete, base+"/mcp", nil)
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("MCP-Protocol-Version", mcp.ProtocolVersion20251125)
		req.Header.Set("X-User", user)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	if code := del("bob"); code != http.StatusNotFound {
		t.Errorf("bob's DELETE of alice's session: %d, want 404", code)
	}
	select {
	case <-cancelled:
		t.Fatal("bob's DELETE cancelled alice's call")
	default:
	}
	if code := del("alice"); code != http.StatusOK {
		t.Errorf("alice's DELETE: %d", code)
	}
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the call was not cancelled upstream when its session ended")
	}
}
