package mcpendpoint

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/elysia-go/elysia/mcpendpoint/internal/jsonrpc"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// TestStdioServesStateless: mcp-go's default client negotiates
// 2026-07-28 over stdio, and an upstream's questions during a call reach
// it as input_required, answered by its elicitation handler; before, the
// stdio server took 2026-07-28 and then declined the upstreams'
// questions, and later refused the version.
func TestStdioServesStateless(t *testing.T) {
	a := newAsker(t)
	ep := New(&source{expose: mcpconfig.DefaultExpose(), gws: []*mcpgateway.Gateway{gateway(t, "up", a.url)}}, nil)
	t.Cleanup(func() { _ = ep.Close(context.Background()) })
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- ep.ServeStdio(ctx, inR, outW, "alice"); _ = outW.Close() }()
	c := mcpclient.NewClient(mcptransport.NewIO(outR, inW, io.NopCloser(strings.NewReader(""))),
		mcpclient.WithElicitationHandler(elicitHandler(func(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
			return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept,
				Content: map[string]any{"a": answerOf(req.Params.Message)}}}, nil
		})))
	ictx, icancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer icancel()
	if err := c.Start(ictx); err != nil {
		t.Fatal(err)
	}
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "default", Version: "1"}
	res, err := c.Initialize(ictx, req)
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if res.ProtocolVersion != mcp.ProtocolVersion20260728 {
		t.Errorf("the default client negotiated %q over stdio, want %q", res.ProtocolVersion, mcp.ProtocolVersion20260728)
	}
	list, err := c.ListTools(ictx, mcp.ListToolsRequest{})
	if err != nil || len(list.Tools) != 3 {
		t.Errorf("tools/list: %v, %v", list, err)
	}
	if ttl, ok := list.TTL(); !ok || ttl != DefaultListTTL.Milliseconds() {
		t.Errorf("tools/list over stdio: ttlMs %d (%v), want %d", ttl, ok, DefaultListTTL.Milliseconds())
	}
	if text, err := callText(ictx, c, "up__two", nil); err != nil || text != "name=accept:Ada color=accept:green" {
		t.Errorf("up__two over stdio = %q, %v", text, err)
	}
	_ = inW.Close()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("ServeStdio: %v", err)
	}
}

func TestRefuseUnserved(t *testing.T) {
	for _, tt := range []struct {
		name, line string
		refused    bool
		code       int // 0: no answer
	}{
		{"initialize", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`, false, 0},
		{"tools/call of a session", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}}`, false, 0},
		{"discover", `{"jsonrpc":"2.0","id":3,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, false, 0},
		{"stateless call", `{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, false, 0},
		{"unserved call", `{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01"}}}`, true, mcp.UNSUPPORTED_PROTOCOL_VERSION},
		{"unserved discover", `{"jsonrpc":"2.0","id":3,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01"}}}`, true, mcp.UNSUPPORTED_PROTOCOL_VERSION},
		{"unserved notification", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01"}}}`, true, 0},
		{"served version in _meta", `{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}}`, false, 0},
		{"not JSON", `io.modelcontextprotocol/protocolVersion`, false, 0},
	} {
		req, ok := jsonrpc.Decode([]byte(tt.line))
		if !ok {
			req = &jsonrpc.Message{}
		}
		answer, refused := refuseUnserved(req)
		if refused != tt.refused {
			t.Errorf("%s: refused %v, want %v", tt.name, refused, tt.refused)
			continue
		}
		if tt.code == 0 {
			if answer != nil {
				t.Errorf("%s: answered %s, want nothing", tt.name, answer)
			}
			continue
		}
		var m struct {
			ID    json.RawMessage `json:"id"`
			Error struct {
				Code int `json:"code"`
				Data struct {
					Supported []string `json:"supported"`
				} `json:"data"`
			} `json:"error"`
		}
		if err := json.Unmarshal(answer, &m); err != nil || m.Error.Code != tt.code || len(m.ID) == 0 {
			t.Errorf("%s: answered %s (%v), want error %d with the request's id", tt.name, answer, err, tt.code)
		}
		if tt.code == mcp.UNSUPPORTED_PROTOCOL_VERSION && (len(m.Error.Data.Supported) == 0 || m.Error.Data.Supported[0] != mcp.ProtocolVersion20260728) {
			t.Errorf("%s: supported %v, want the versions served", tt.name, m.Error.Data.Supported)
		}
	}
}

// FuzzRefuseUnserved: any line a stdio client sends is either passed on
// or refused with one JSON-RPC error line.
func FuzzRefuseUnserved(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":3,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01"}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":7}}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		m, ok := jsonrpc.Decode(line)
		if !ok {
			return // passed on to mcp-go
		}
		answer, refused := refuseUnserved(m)
		if !refused && answer != nil {
			t.Fatalf("an answer to a line passed on: %s", answer)
		}
		if answer != nil && (!json.Valid(answer) || answer[len(answer)-1] != '\n' || strings.Count(string(answer), "\n") != 1) {
			t.Fatalf("answer %q is not one JSON line", answer)
		}
	})
}

// TestStdioPromptAsks: over stdio (elysia mcp serve) a 2026-07-28
// client's prompts/get whose server asks a question gets it as
// input_required, answered by the client's elicitation handler, and then
// the prompt; a person slower to answer than the server's call_timeout
// is not cut off (the prompt is bounded as a tool call is).
func TestStdioPromptAsks(t *testing.T) {
	g := mcpgateway.New(mcpconfig.ServerConfig{Name: "k", Transport: mcpconfig.TransportHTTP, URL: keyedUpstream(t), Enabled: true,
		ConnectTimeout: 5 * time.Second, CallTimeout: 300 * time.Millisecond}, nil)
	t.Cleanup(func() { _ = g.Close() })
	ep := New(&source{expose: mcpconfig.DefaultExpose(), gws: []*mcpgateway.Gateway{g}}, nil)
	t.Cleanup(func() { _ = ep.Close(context.Background()) })
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- ep.ServeStdio(ctx, inR, outW, "alice"); _ = outW.Close() }()
	c := mcpclient.NewClient(mcptransport.NewIO(outR, inW, io.NopCloser(strings.NewReader(""))),
		mcpclient.WithElicitationHandler(elicitHandler(func(ctx context.Context, _ mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
			select { // a person takes twice the server's call_timeout to answer
			case <-time.After(600 * time.Millisecond):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept,
				Content: map[string]any{"name": "divers"}}}, nil
		})))
	ictx, icancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer icancel()
	if err := c.Start(ictx); err != nil {
		t.Fatal(err)
	}
	if res, err := c.Initialize(ictx, mcp.InitializeRequest{}); err != nil || res.ProtocolVersion != mcp.ProtocolVersion20260728 {
		t.Fatalf("initialize: %v %+v", err, res)
	}
	req := mcp.GetPromptRequest{}
	req.Params.Name, req.Params.Arguments = "k__brief", map[string]string{"topic": "reefs"}
	got, err := c.GetPrompt(ictx, req)
	if err != nil || len(got.Messages) != 1 {
		t.Fatalf("prompts/get over stdio: %v %+v", err, got)
	}
	if tc, _ := got.Messages[0].Content.(mcp.TextContent); tc.Text != "Brief divers on reefs" {
		t.Errorf("prompts/get over stdio = %+v", got.Messages[0].Content)
	}
	_ = inW.Close()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("ServeStdio: %v", err)
	}
}
