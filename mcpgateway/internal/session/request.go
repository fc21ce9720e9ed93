package session

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"

	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// RawTool is the part of a listed tool the gateway reads; everything else is
// ignored, and the schemas stay raw.
type RawTool struct {
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema"`
	Annotations  json.RawMessage `json:"annotations"`
	Execution    struct {
		TaskSupport mcp.TaskSupport `json:"taskSupport"`
	} `json:"execution"`
}

// SafeToRetry reports whether the server says running the tool twice does no
// harm.
func (rt *RawTool) SafeToRetry() bool {
	var a struct {
		ReadOnlyHint   *bool `json:"readOnlyHint"`
		IdempotentHint *bool `json:"idempotentHint"`
	}
	if len(rt.Annotations) == 0 || json.Unmarshal(rt.Annotations, &a) != nil {
		return false
	}
	return a.ReadOnlyHint != nil && *a.ReadOnlyHint || a.IdempotentHint != nil && *a.IdempotentHint
}

// ListTools sends tools/list through the client's transport, following
// nextCursor, and keeps each tool's schemas as raw JSON: mcp-go's typed
// mcp.Tool drops $schema and the composition keywords.
func (c *Conn) ListTools(ctx context.Context, s *Session) ([]RawTool, error) {
	var out []RawTool
	seen := map[string]bool{}
	cursor := ""
	for page := 0; ; page++ {
		if page > 1000 {
			return nil, fmt.Errorf("tools/list: more than 1000 pages")
		}
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		sctx, span := startMCP(ctx, c.cfg.Name, s, string(mcp.MethodToolsList), "")
		raw, err := c.request(sctx, s, mcp.MethodToolsList, params)
		endMCP(span, err, false)
		if err != nil {
			return nil, err
		}
		var result struct {
			Tools      []RawTool `json:"tools"`
			NextCursor string    `json:"nextCursor"`
		}
		if err := json.Unmarshal(raw, &result); err != nil {
			return nil, fmt.Errorf("tools/list: decode result: %w", err)
		}
		out = append(out, result.Tools...)
		if result.NextCursor == "" || seen[result.NextCursor] {
			return c.withoutBadHeaders(s, out), nil
		}
		seen[result.NextCursor] = true
		cursor = result.NextCursor
	}
}

// request sends one request on s's transport as it is, outside mcp-go's
// typed client, and returns its result: for answers the typed client
// decodes into types that drop what the gateway needs (a tool's inputSchema
// as sent, a task). On the 2026-07-28 core the request carries the
// protocol in _meta and in the standard headers. params is the caller's
// and gains _meta there.
func (c *Conn) request(ctx context.Context, s *Session, method mcp.MCPMethod, params map[string]any) (json.RawMessage, error) {
	t := s.client.GetTransport()
	version := s.client.ProtocolVersion()
	var header map[string][]string
	if tm := traceMeta(ctx); tm != nil {
		meta, _ := params["_meta"].(map[string]any)
		if meta == nil {
			meta = map[string]any{}
		}
		maps.Copy(meta, tm)
		params["_meta"] = meta
	}
	if mcp.IsModernProtocol(version) {
		meta, _ := params["_meta"].(map[string]any)
		if meta == nil {
			meta = map[string]any{}
		}
		meta[mcp.MetaKeyProtocolVersion] = version
		meta[mcp.MetaKeyClientInfo] = clientInfo
		meta[mcp.MetaKeyClientCapabilities] = clientCapabilities()
		params["_meta"] = meta
		encoded, _ := json.Marshal(params)
		header = map[string][]string{}
		for k, v := range mcp.StandardHeaders(version, method, encoded) {
			header[k] = []string{v}
		}
	}
	resp, err := t.SendRequest(ctx, mcptransport.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION,
		ID:      c.rawRequestID(method),
		Method:  string(method),
		Params:  params,
		Header:  header,
	})
	if err != nil {
		return nil, &transportError{err}
	}
	if resp == nil {
		return nil, fmt.Errorf("%s: no response", method)
	}
	if resp.Error != nil {
		return nil, fmt.Errorf("%s: %w", method, resp.Error.AsError())
	}
	return resp.Result, nil
}

// rawRequestID is a new id for a request the conn sends itself, past
// mcp-go's Client: "elysia-<method>-N", a string, so it never meets one of
// the Client's numbers in the transport's table of requests waiting for an
// answer.
func (c *Conn) rawRequestID(method mcp.MCPMethod) mcp.RequestId {
	return mcp.NewRequestId("elysia-" + string(method) + "-" + strconv.FormatInt(c.seq.Add(1), 10))
}
