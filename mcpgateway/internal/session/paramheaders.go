package session

import (
	"bytes"
	"encoding/json"
	"net/http"

	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// Custom headers from tool parameters (2026-07-28, SEP-2243): a tool's
// input schema may mark a parameter "x-mcp-header": "Name", and a client
// over Streamable HTTP then mirrors its value into an Mcp-Param-Name header
// (Base64 when the value is not plain ASCII, omitted when null), so that a
// proxy can route on it without reading the body. mcp-go does this for the
// tools its typed ListTools cached; the gateway lists raw (to keep the
// schemas as sent), so it does it here, with mcp-go's own encoding.

// ParamHeaders reports whether schema, a tool's input schema, marks a
// parameter x-mcp-header: only such a tool's Call carries its Schema.
func ParamHeaders(schema json.RawMessage) bool {
	return bytes.Contains(schema, []byte(`"x-mcp-header"`))
}

// paramHeaders returns the Mcp-Param-* headers of call on s: nil unless s is
// a 2026-07-28 connection over HTTP and the tool marks parameters.
func paramHeaders(s *Session, call Call) http.Header {
	if call.Schema == nil || !mcp.IsModernProtocol(s.protocol) {
		return nil
	}
	if _, ok := s.client.GetTransport().(mcptransport.HTTPConnection); !ok {
		return nil
	}
	tool := &mcp.Tool{Name: call.Tool, RawInputSchema: call.Schema}
	if mcp.ValidateParamHeaderAnnotations(tool) != nil {
		return nil // listed without it: see withoutBadHeaders
	}
	params, err := json.Marshal(map[string]any{"name": call.Tool, "arguments": call.Inputs})
	if err != nil {
		return nil
	}
	generated := mcp.GenerateParamHeaders(tool, params)
	if len(generated) == 0 {
		return nil
	}
	h := make(http.Header, len(generated))
	for k, v := range generated {
		h.Set(k, v)
	}
	return h
}

// withoutBadHeaders drops, on a 2026-07-28 connection over HTTP, the tools
// whose x-mcp-header annotations break SEP-2243's rules (a name that is not
// a header token, given twice, a parameter that is not a primitive): a
// client MUST leave them out, so that one bad definition does not take the
// others away.
func (c *Conn) withoutBadHeaders(s *Session, tools []RawTool) []RawTool {
	if !mcp.IsModernProtocol(s.protocol) {
		return tools
	}
	if _, ok := s.client.GetTransport().(mcptransport.HTTPConnection); !ok {
		return tools
	}
	out := tools[:0]
	for _, rt := range tools {
		if ParamHeaders(rt.InputSchema) {
			if err := mcp.ValidateParamHeaderAnnotations(&mcp.Tool{Name: rt.Name, RawInputSchema: rt.InputSchema}); err != nil {
				c.logger.Warn("tool left out: its x-mcp-header annotations are invalid", "tool", rt.Name, logKeyErr, c.mask(err.Error()))
				continue
			}
		}
		out = append(out, rt)
	}
	return out
}
