// Package content turns what the gateways give back into MCP's types: a
// call's result and its content items, a tool's result (gateways mode,
// ask), and a call's arguments into what the gateway validates.
package content

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/tools"
)

// Arguments decodes the call's arguments with numbers kept as json.Number,
// as the gateway's validation expects.
func Arguments(req mcp.CallToolRequest) (map[string]any, error) {
	raw := req.Params.RawArguments
	if len(raw) == 0 {
		if req.Params.Arguments == nil {
			return map[string]any{}, nil
		}
		b, err := json.Marshal(req.Params.Arguments)
		if err != nil {
			return nil, fmt.Errorf("arguments: %w", err)
		}
		raw = b
	}
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return map[string]any{}, nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return nil, errors.New("arguments must be a JSON object")
	}
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}

// Result is a gateway's result as MCP content.
func Result(r *mcpgateway.CallResult) *mcp.CallToolResult {
	out := &mcp.CallToolResult{IsError: r.IsError, Content: make([]mcp.Content, 0, len(r.Content))}
	for _, item := range r.Content {
		out.Content = append(out.Content, Item(item))
	}
	if r.Structured != nil {
		out.StructuredContent = r.Structured
	}
	return out
}

// Item turns back one content item of a CallResult (or of a prompt's
// message).
func Item(item map[string]any) mcp.Content {
	str := func(k string) string { s, _ := item[k].(string); return s }
	if t, _ := item["truncated"].(bool); t && str("type") != "text" {
		return mcp.NewTextContent(fmt.Sprintf("[%s %s left out: over the service's output cap]", str("type"), str("mime_type")))
	}
	switch str("type") {
	case "text":
		return mcp.NewTextContent(str("text"))
	case "image":
		return mcp.NewImageContent(str("data"), str("mime_type"))
	case "audio":
		return mcp.NewAudioContent(str("data"), str("mime_type"))
	case "resource_link":
		return mcp.NewResourceLink(str("uri"), str("name"), str("description"), str("mime_type"))
	case "resource":
		if d := str("data"); d != "" {
			return mcp.NewEmbeddedResource(mcp.BlobResourceContents{URI: str("uri"), MIMEType: str("mime_type"), Blob: d})
		}
		return mcp.NewEmbeddedResource(mcp.TextResourceContents{URI: str("uri"), MIMEType: str("mime_type"), Text: str("text")})
	}
	return mcp.NewTextContent(str("raw"))
}

// OfTool is a tool's tools.Result (gateways mode, ask) as MCP content:
// its text, and its objects as structured content.
func OfTool(r tools.Result) *mcp.CallToolResult {
	text := r.LLMText
	if r.IsError {
		text = strings.TrimSpace(r.Error + "\n" + r.Feedback)
	}
	if text == "" {
		b, _ := json.Marshal(map[string]any{"objects": r.Objects, "metadata": r.Metadata}) // JSON values
		text = string(b)
	}
	out := &mcp.CallToolResult{IsError: r.IsError, Content: []mcp.Content{mcp.NewTextContent(text)}}
	if !r.IsError && len(r.Objects) > 0 {
		out.StructuredContent = map[string]any{"objects": r.Objects}
	}
	return out
}
