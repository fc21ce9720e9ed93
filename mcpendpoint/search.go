package mcpendpoint

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/mcpendpoint/internal/catalog"
	"github.com/elysia-go/elysia/mcpendpoint/internal/jsonrpc"
	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// Search bounds.
const (
	defaultSearchLimit = 10
	maxSearchLimit     = 50
	maxQueryBytes      = 1024
)

// found is one tool search_tools answers with.
type found struct {
	Name         string          `json:"name"`
	Server       string          `json:"server"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
}

// search is search_tools: each server ranks its own tools as the gateway's
// list query does, and the results are taken in turn, best of each first.
func (e *Endpoint) search(ctx context.Context, user string, cat *catalog.Catalog, args map[string]any) (*mcp.CallToolResult, error) {
	query, _ := args["query"].(string)
	if query == "" || len(query) > maxQueryBytes {
		return mcp.NewToolResultError(fmt.Sprintf(`search_tools needs "query": words to look for, at most %d bytes`, maxQueryBytes)), nil
	}
	server, _ := args["server"].(string)
	limit := defaultSearchLimit
	if n, ok := args["limit"].(json.Number); ok {
		if v, err := n.Int64(); err == nil && v >= 1 {
			limit = int(min(v, maxSearchLimit))
		}
	}
	var ups []mcpconfig.ServerConfig
	var targets []Upstream
	for _, up := range e.src.Upstreams() {
		cfg := up.Config()
		if cfg.Enabled && (server == "" || cfg.Name == server) {
			ups = append(ups, cfg)
			targets = append(targets, up)
		}
	}
	if server != "" && len(targets) == 0 {
		return mcp.NewToolResultError(fmt.Sprintf("no server %q", server)), nil
	}
	pages := make([][]mcpgateway.ToolInfo, len(targets))
	e.eachServer(mcpgateway.WithUser(ctx, user), len(targets), func(lctx context.Context, i int) {
		p, err := targets[i].ListTools(lctx, mcpgateway.ListQuery{Query: query, Limit: limit})
		if err != nil {
			e.logger.Warn("aggregate endpoint: server left out of a search", logKeyServer, ups[i].Name, logKeyErr, err.Error())
			return
		}
		pages[i] = p.Tools
	})
	out := []found{}
	for rank := 0; len(out) < limit; rank++ {
		more := false
		for i, p := range pages {
			if rank >= len(p) || len(out) >= limit {
				continue
			}
			more = true
			ti := p[rank]
			name, ok := cat.Name(ups[i].Name, ti.Name)
			if !ok {
				continue // listed since the catalog was built; the next search has it
			}
			out = append(out, found{Name: name, Server: ups[i].Name, Description: ti.Description,
				InputSchema: ti.InputSchema, OutputSchema: ti.OutputSchema})
		}
		if !more {
			break
		}
	}
	body := map[string]any{"query": query, "tools": out}
	text, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encode search results: %w", err)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(string(text))}, StructuredContent: body}, nil
}

// writeRPCError answers an HTTP request with a JSON-RPC error and status.
func writeRPCError(w http.ResponseWriter, status, code int, msg string) {
	jsonrpc.WriteError(w, status, code, msg)
}
