package mcpendpoint

import (
	"context"
	"sync"
	"testing"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/internal/testenv"
	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// TestURLElicitationComplete: a server's notifications/elicitation/complete
// for its url-mode question reaches the MCP client that got the question,
// under the id that client got; one for a question never asked reaches
// nobody.
func TestURLElicitationComplete(t *testing.T) {
	relayed := make(chan struct{})
	var once sync.Once
	src := &source{expose: mcpconfig.DefaultExpose(), gws: []*mcpgateway.Gateway{gateway(t, "forms", testenv.URLFormsServer(t, relayed))}}
	base := serve(t, New(src, nil))
	var mu sync.Mutex
	var asked []string
	var completed []string
	//lint:ignore SA1019 the GET stream of the protocol the endpoint serves (2025-11-25)
	tr, err := mcptransport.NewStreamableHTTP(base+"/mcp", mcptransport.WithContinuousListening()) //nolint:staticcheck // see above
	if err != nil {
		t.Fatal(err)
	}
	c := mcpclient.NewClient(tr, mcpclient.WithElicitationHandler(elicitHandler(func(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, req.Params.ElicitationID)
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept}}, nil
	})))
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationElicitationComplete) {
			id, _ := n.Params.AdditionalFields["elicitationId"].(string)
			mu.Lock()
			defer mu.Unlock()
			completed = append(completed, id)
			once.Do(func() { close(relayed) })
		}
	})
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.ProtocolVersion20251125
	init.Params.Capabilities.Elicitation = &mcp.ElicitationCapability{Form: &struct{}{}, URL: &struct{}{}}
	if _, err := c.Initialize(t.Context(), init); err != nil {
		t.Fatal(err)
	}
	if text, isErr := call(t, c, "forms__link", nil); isErr || text != "signed" {
		t.Fatalf("forms__link = %v %q", isErr, text)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 1 || asked[0] == "" || asked[0] == "up-7" {
		t.Fatalf("the client was asked %q, want one question under an id of the endpoint's", asked)
	}
	if len(completed) != 1 || completed[0] != asked[0] {
		t.Errorf("completions %q, want one for %q (the question the client got)", completed, asked[0])
	}
}

// elicitHandler adapts a func to mcp-go's client.ElicitationHandler.
type elicitHandler func(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error)

func (f elicitHandler) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return f(ctx, req)
}
