package mcpgateway

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/internal/testenv"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
	"github.com/elysia-go/elysia/tools"
)

// modernServer is a server that speaks only 2026-07-28, over Streamable
// HTTP: mcp-go's server with that version alone, and any POST of another
// version (an initialize) a method it does not know, 404 and -32601, since
// mcp-go's server alone answers initialize whatever its versions. Its
// tools are echo and ask (the user's name, asked with an input_required
// result); its resource test://r can be subscribed to.
type modernServer struct {
	srv *mcpserver.MCPServer
	cfg mcpconfig.ServerConfig
	// mu guards listens: the sessions of its subscriptions/listen
	// streams and the resources each subscribed to.
	mu      sync.Mutex
	listens []modernListen
}

type modernListen struct {
	session mcpserver.ClientSession
	uris    []string
}

// updated sends notifications/resources/updated of uri on the streams that
// subscribed to it, as a server does: mcp-go's server (v1.2.1) has no call
// for it, and its Streamable HTTP sessions of 2026-07-28 do not record
// resource subscriptions.
func (m *modernServer) updated(uri string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, l := range m.listens {
		if s := l.session; slices.Contains(l.uris, uri) {
			n := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{
				Method: string(mcp.MethodNotificationResourceUpdated), Params: mcp.NotificationParams{AdditionalFields: map[string]any{"uri": uri}}}}
			select {
			case s.NotificationChannel() <- n:
			default:
			}
		}
	}
}

func newModernServer(t *testing.T) *modernServer {
	t.Helper()
	m := &modernServer{}
	hooks := &mcpserver.Hooks{}
	hooks.AddBeforeSubscriptionsListen(func(ctx context.Context, _ any, req *mcp.SubscriptionsListenRequest) {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.listens = append(m.listens, modernListen{mcpserver.ClientSessionFromContext(ctx), req.Params.Notifications.ResourceSubscriptions})
	})
	srv := mcpserver.NewMCPServer("modern", "1.0.0", mcpserver.WithToolCapabilities(true), mcpserver.WithResourceCapabilities(true, true),
		mcpserver.WithHooks(hooks))
	m.srv = srv
	srv.AddResource(mcp.NewResource("test://r", "r"), func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: "test://r", Text: "r"}}, nil
	})
	srv.AddTool(mcp.NewTool("echo", mcp.WithString("message", mcp.Required())),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("Echo: " + req.GetString("message", "")), nil
		})
	srv.AddTool(mcp.NewTool("ask"), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ans := mcpserver.ElicitationResponse(req.Params.InputResponses, "name")
		if ans == nil {
			return mcpserver.NewInputRequestBuilder("").Elicit("name", mcp.ElicitationParams{Message: "Your name?",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}}).ToolResult(), nil
		}
		content, _ := ans.Content.(map[string]any)
		return mcp.NewToolResultText(fmt.Sprintf("%s: %v", ans.Action, content["name"])), nil
	})
	h := mcpserver.NewStreamableHTTPServer(srv, mcpserver.WithStreamableHTTPProtocolVersions(mcp.ProtocolVersion20260728))
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && !mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32601,"message":"Method not found"}}`)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	m.cfg = mcpconfig.ServerConfig{Name: "modern", Transport: mcpconfig.TransportHTTP, URL: hs.URL + "/mcp", Enabled: true,
		ConnectTimeout: 5 * time.Second, CallTimeout: 5 * time.Second}
	return m
}

// TestModernServer: through the gateway a server that speaks only
// 2026-07-28 lists and runs its tools like any other, its question reaches
// the user of the call, a tool it adds is listed, and Status shows the
// version.
func TestModernServer(t *testing.T) {
	t.Parallel()
	m := newModernServer(t)
	g := newGateway(t, m.cfg, nil)
	infos, err := g.List(t.Context())
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if got := strings.Join(toolNames(infos), ","); got != "ask,echo" {
		t.Errorf("tools %s, want ask,echo", got)
	}
	if st := g.Status(); st.ProtocolVersion != mcp.ProtocolVersion20260728 {
		t.Errorf("Status().ProtocolVersion = %q, want %s", st.ProtocolVersion, mcp.ProtocolVersion20260728)
	}
	res, err := g.Execute(t.Context(), "echo", map[string]any{"message": "hi"})
	if err != nil || res.IsError || res.Text() != "Echo: hi" {
		t.Fatalf("echo = %+v, %v", res, err)
	}
	u := &userStream{answer: func(tools.Question) tools.Answer {
		return tools.Answer{Action: tools.ElicitAccept, Content: map[string]any{"name": "Ada"}}
	}}
	res, err = g.ExecuteWith(t.Context(), "ask", nil, u)
	if err != nil || res.IsError || res.Text() != "accept: Ada" {
		t.Fatalf("ask = %+v, %v; want the user's answer", res, err)
	}
	if len(u.asked) != 1 || u.asked[0].Payload.Message != "Your name?" || u.asked[0].Payload.Server != "modern" {
		t.Errorf("the user was asked %+v, want the server's question", u.asked)
	}

	// Added again until listed: a list_changed sent before the
	// subscriptions/listen stream is open is lost.
	testenv.WaitFor(t, 10*time.Second, "the added tool to be listed", func() bool {
		m.srv.AddTool(mcp.NewTool("added"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("new"), nil
		})
		infos, err := g.List(t.Context())
		return err == nil && slices.Contains(toolNames(infos), "added")
	})
}

// TestModernServerResourceUpdates: a resource subscription on a server
// that speaks only 2026-07-28 goes into the session's subscriptions/listen
// stream (there is no resources/subscribe), the server's updates reach the
// subscriber, and stop takes it out of the stream again.
func TestModernServerResourceUpdates(t *testing.T) {
	t.Parallel()
	m := newModernServer(t)
	g := newGateway(t, m.cfg, nil)
	var updates atomic.Int32
	stop, err := g.Subscribe(t.Context(), "test://r", func() { updates.Add(1) })
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	// Sent again until seen: an update sent before the stream is open is
	// lost.
	testenv.WaitFor(t, 10*time.Second, "notifications/resources/updated to reach the subscriber", func() bool {
		m.updated("test://r")
		return updates.Load() > 0
	})
	if err := stop(t.Context()); err != nil {
		t.Errorf("stop: %v", err)
	}
	testenv.WaitFor(t, 10*time.Second, "a stream without test://r after stop", func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return len(m.listens[len(m.listens)-1].uris) == 0
	})
}
