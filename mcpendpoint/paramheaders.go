package mcpendpoint

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/mcpendpoint/internal/reply"
)

// xMCPHeader is the annotation by which a tool's parameter travels in an
// Mcp-Param-* header too (SEP-2243).
var xMCPHeader = []byte(`"x-mcp-header"`)

// checkParamHeaders refuses the 2026-07-28 tools/call req of user when
// the Mcp-Param-* headers its tool's x-mcp-header parameters call for
// disagree with its arguments: a header missing, not valid Base64, or
// naming another value (400, -32020 HeaderMismatch). mcp-go checks them
// only for tools it holds, and every tool here is the endpoint's router's.
// A request that did not come over HTTP has no headers to check.
func (e *Endpoint) checkParamHeaders(ctx context.Context, user string, req mcp.CallToolRequest, reply *reply.Reply) error {
	if req.Header == nil || req.Header.Get(mcp.HeaderProtocolVersion) == "" {
		return nil
	}
	_, en := e.lookup(ctx, user, clientToolName(req))
	if en == nil || !bytes.Contains(en.Info.InputSchema, xMCPHeader) {
		return nil // most tools have none: no schema is decoded for them
	}
	params, err := json.Marshal(struct {
		Arguments any `json:"arguments"`
	}{req.Params.Arguments})
	if err != nil {
		return nil // arguments mcp-go decoded always encode
	}
	tool := &mcp.Tool{Name: en.Name, RawInputSchema: en.Info.InputSchema}
	err = mcp.ValidateParamHeadersLookup(func(name string) (string, bool) {
		v := req.Header.Values(name)
		if len(v) == 0 {
			return "", false
		}
		return v[0], true
	}, tool, params)
	if err == nil {
		return nil
	}
	if reply != nil {
		reply.SetError(mcp.HEADER_MISMATCH, err.Error(), nil)
	}
	return err
}
