package mcpgateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"

	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/mcpgateway/internal/session"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
	"github.com/elysia-go/elysia/tools"
)

// bigServer is a gateway on an in-process server with n tools named
// tool_0000 ..., each with a description and a small schema.
func bigServer(t *testing.T, n int) *Gateway {
	t.Helper()
	srv := mcpserver.NewMCPServer("big", "1.0.0", mcpserver.WithToolCapabilities(false))
	for i := range n {
		srv.AddTool(mcp.NewTool(fmt.Sprintf("tool_%04d", i),
			mcp.WithDescription(fmt.Sprintf("Does thing number %d of the big server", i)),
			mcp.WithString("arg", mcp.Description("an argument"))),
			func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultText("ok"), nil
			})
	}
	srv.AddTool(mcp.NewTool("send_invoice", mcp.WithDescription("Email an invoice to a customer")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("sent"), nil
		})
	g := New(mcpconfig.ServerConfig{Name: "big", Transport: mcpconfig.TransportHTTP, URL: "http://in-process/mcp", Enabled: true}, nil)
	g.shared.conns[0].SetDialer(dialInProcess(g.shared.conns[0], func() mcptransport.Interface { return mcptransport.NewInProcessTransport(srv) }))
	t.Cleanup(func() { _ = g.Close() })
	return g
}

// dialInProcess is a dialer for tests: every session is a client on the
// transport newTransport returns (see Conn.DialTransport).
func dialInProcess(c *session.Conn, newTransport func() mcptransport.Interface) func(context.Context) (*session.Session, error) {
	return func(hsCtx context.Context) (*session.Session, error) {
		return c.DialTransport(hsCtx, "in-process", newTransport())
	}
}

// TestBigServerListIsCapped lists a server with 5,000 tools: the result fits
// the output cap and says how many tools it left out, the description names
// only the first tools, and a query finds one tool among them.
func TestBigServerListIsCapped(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		g := bigServer(t, 5000)
		ctx := t.Context()
		res, err := g.Run(ctx, tools.Call{Args: map[string]any{"action": "list"}}, tools.Discard)
		if err != nil || res.IsError {
			t.Fatalf("list = %v %+v", err, res)
		}
		b, _ := json.Marshal(res.Objects)
		if len(b) > defaultOutputCap {
			t.Errorf("list result is %d bytes, want at most %d", len(b), defaultOutputCap)
		}
		left, _ := res.Metadata["omitted"].(int)
		if left != 5001-len(res.Objects) || !strings.Contains(fmt.Sprint(res.Metadata["note"]), fmt.Sprintf("%d of 5001 tools left out", left)) {
			t.Errorf("omitted = %v, note = %q; want %d and a note saying so", res.Metadata["omitted"], res.Metadata["note"], 5001-len(res.Objects))
		}
		desc := g.Description()
		if len(desc) > 1024 || !strings.Contains(desc, "and 4971 more") {
			t.Errorf("description is %d bytes: %.200q..., want the first %d names and how many more", len(desc), desc, maxDescribedTools)
		}

		res, err = g.Run(ctx, tools.Call{Args: map[string]any{"action": "list", "query": "email invoice"}}, tools.Discard)
		if err != nil || res.IsError || len(res.Objects) == 0 || res.Objects[0]["name"] != "send_invoice" {
			t.Fatalf("list with a query = %v %+v, want send_invoice first", err, res.Objects[:min(len(res.Objects), 3)])
		}
		if res.Metadata["matches"] != 1 {
			t.Errorf("matches = %v, want 1", res.Metadata["matches"])
		}
		_ = g.Close()
	})
}

// TestListToolsPages walks every page of a 5,000-tool server: each tool comes
// exactly once, in order, every page fits the cap, and a bad cursor is
// refused.
func TestListToolsPages(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		g := bigServer(t, 5000)
		ctx := t.Context()
		seen := map[string]bool{}
		cursor := ""
		for pages := 0; ; pages++ {
			if pages > 1000 {
				t.Fatal("paging does not end")
			}
			p, err := g.ListTools(ctx, ListQuery{Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			if b, _ := json.Marshal(p.Tools); len(b) > defaultOutputCap {
				t.Errorf("page %d is %d bytes", pages, len(b))
			}
			for _, ti := range p.Tools {
				if seen[ti.Name] {
					t.Fatalf("%s came twice", ti.Name)
				}
				seen[ti.Name] = true
			}
			if p.Total != 5001 {
				t.Errorf("Total = %d", p.Total)
			}
			if cursor = p.NextCursor; cursor == "" {
				break
			}
		}
		if len(seen) != 5001 {
			t.Errorf("paged %d tools, want 5001", len(seen))
		}
		p, err := g.ListTools(ctx, ListQuery{Query: "number 4999", Limit: 1})
		if err != nil || len(p.Tools) != 1 || p.Tools[0].Name != "tool_4999" {
			t.Errorf("query 'number 4999' = %v %+v, want tool_4999 first", err, p.Tools)
		}
		for _, bad := range []string{"x", "-1", "99999"} {
			if _, err := g.ListTools(ctx, ListQuery{Cursor: bad}); !errors.Is(err, ErrBadCursor) {
				t.Errorf("cursor %q: err = %v, want ErrBadCursor", bad, err)
			}
		}
		_ = g.Close()
	})
}

func TestSelectTools(t *testing.T) {
	t.Parallel()
	infos := []ToolInfo{
		{Name: "list_todos", Description: "List every todo"},
		{Name: "create_todo", Description: "Create a todo item"},
		{Name: "search_todos", Description: "Search todos by text"},
		{Name: "echo", Description: "Echo a message back"},
	}
	for _, tc := range []struct{ query, want string }{
		{"", "list_todos,create_todo,search_todos,echo"},
		{"echo", "echo"},
		{"create", "create_todo"},
		{"todo", "list_todos,create_todo,search_todos"},
		{"search text", "search_todos"},
		{"message", "echo"},
		{"zebra", ""},
	} {
		t.Run(tc.query, func(t *testing.T) {
			if got := strings.Join(toolNames(selectTools(infos, tc.query)), ","); got != tc.want {
				t.Errorf("selectTools(%q) = %s, want %s", tc.query, got, tc.want)
			}
		})
	}
}
