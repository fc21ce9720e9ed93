package mcpendpoint

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// TestStdioNegotiatesOnlyWhatItServes: mcp-go's default client, which
// tries server/discover at 2026-07-28 first, is kept on 2025-11-25 over
// stdio, whose server-initiated requests the endpoint serves; before, it
// went on to 2026-07-28, where the upstreams' elicitation came back
// declined and their sampling failed.
func TestStdioNegotiatesOnlyWhatItServes(t *testing.T) {
	ep := New(&source{expose: mcpconfig.DefaultExpose()}, nil)
	t.Cleanup(func() { _ = ep.Close(context.Background()) })
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- ep.ServeStdio(ctx, inR, outW, "alice"); _ = outW.Close() }()
	c := mcpclient.NewClient(mcptransport.NewIO(outR, inW, io.NopCloser(strings.NewReader(""))))
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
	if res.ProtocolVersion != mcp.ProtocolVersion20251125 {
		t.Errorf("the default client negotiated %q over stdio, want %q", res.ProtocolVersion, mcp.ProtocolVersion20251125)
	}
	if _, err := c.ListTools(ictx, mcp.ListToolsRequest{}); err != nil {
		t.Errorf("tools/list after the fallback: %v", err)
	}
	_ = inW.Close()
	cancel()
	<-done
}

func TestRefuseStateless(t *testing.T) {
	for _, tt := range []struct {
		name, line string
		refused    bool
		code       int // 0: no answer
	}{
		{"initialize", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`, false, 0},
		{"tools/call of a session", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}}`, false, 0},
		{"discover", `{"jsonrpc":"2.0","id":3,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, true, mcp.METHOD_NOT_FOUND},
		{"stateless call", `{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, true, mcp.UNSUPPORTED_PROTOCOL_VERSION},
		{"stateless notification", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, true, 0},
		{"served version in _meta", `{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}}`, false, 0},
		{"a tool argument naming the method", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"x","arguments":{"q":"server/discover"}}}`, false, 0},
		{"not JSON", `server/discover`, false, 0},
	} {
		answer, refused := refuseStateless([]byte(tt.line))
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
		if tt.code == mcp.UNSUPPORTED_PROTOCOL_VERSION && (len(m.Error.Data.Supported) == 0 || m.Error.Data.Supported[0] != mcp.ProtocolVersion20251125) {
			t.Errorf("%s: supported %v, want the versions served", tt.name, m.Error.Data.Supported)
		}
	}
}

// FuzzRefuseStateless: any line a stdio client sends is either passed on
// or refused with one JSON-RPC error line.
func FuzzRefuseStateless(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":3,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":7}}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		answer, refused := refuseStateless(line)
		if !refused && answer != nil {
			t.Fatalf("an answer to a line passed on: %s", answer)
		}
		if answer != nil && (!json.Valid(answer) || answer[len(answer)-1] != '\n' || strings.Count(string(answer), "\n") != 1) {
			t.Fatalf("answer %q is not one JSON line", answer)
		}
	})
}
