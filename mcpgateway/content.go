package mcpgateway

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/mcpgateway/internal/session"
)

// convert turns an MCP tools/call result into a CallResult capped at limit
// bytes, with notes saying what was cut.
func convert(res *mcp.CallToolResult, limit int) *CallResult {
	out := &CallResult{IsError: res.IsError, Content: make([]map[string]any, 0, len(res.Content))}
	b := &session.Budget{Left: limit}
	var text strings.Builder
	total := 0
	for _, c := range res.Content {
		item, line, size := convertItem(c, b)
		total += size
		out.Content = append(out.Content, item)
		if line != "" {
			if text.Len() > 0 {
				text.WriteByte('\n')
			}
			text.WriteString(line)
		}
	}
	if raw := structured(res); raw != nil {
		total += len(raw)
		if s, cut := b.Take(string(raw)); cut {
			out.Structured = map[string]any{"truncated": true, "size": len(raw), "prefix": s}
		} else {
			out.Structured = json.RawMessage(raw)
		}
		if text.Len() == 0 {
			text.Write(raw)
		}
	}
	llm := text.String()
	if len(llm) > limit || b.Left == 0 && total > limit {
		shown := min(len(llm), limit)
		llm = llm[:shown] + fmt.Sprintf("\n[output truncated: %d bytes, showing first %d]", max(total, len(llm)), shown)
	}
	out.llmText = llm
	return out
}

// structured returns the structured content as JSON, or nil.
func structured(res *mcp.CallToolResult) []byte {
	if len(res.RawStructuredContent) > 0 && string(res.RawStructuredContent) != "null" {
		return res.RawStructuredContent
	}
	if res.StructuredContent == nil {
		return nil
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return nil
	}
	return b
}

// convertItem returns one content item as a map, the line the model sees for
// it, and its size before capping.
func convertItem(c mcp.Content, b *session.Budget) (map[string]any, string, int) {
	switch v := c.(type) {
	case mcp.TextContent:
		s, cut := b.Take(v.Text)
		item := map[string]any{"type": "text", "text": s}
		if cut {
			item["truncated"] = true
			item["size"] = len(v.Text)
		}
		return item, v.Text, len(v.Text)
	case mcp.ImageContent:
		return binaryItem("image", v.MIMEType, v.Data, b), fmt.Sprintf("[image %s, %d bytes base64]", v.MIMEType, len(v.Data)), len(v.Data)
	case mcp.AudioContent:
		return binaryItem("audio", v.MIMEType, v.Data, b), fmt.Sprintf("[audio %s, %d bytes base64]", v.MIMEType, len(v.Data)), len(v.Data)
	case mcp.ResourceLink:
		item := map[string]any{"type": "resource_link", "uri": v.URI, "name": v.Name, "description": v.Description, "mime_type": v.MIMEType}
		return item, fmt.Sprintf("[resource link %s: %s]", v.Name, v.URI), len(v.URI)
	case mcp.EmbeddedResource:
		switch r := v.Resource.(type) {
		case mcp.TextResourceContents:
			s, cut := b.Take(r.Text)
			item := map[string]any{"type": "resource", "uri": r.URI, "mime_type": r.MIMEType, "text": s}
			if cut {
				item["truncated"] = true
			}
			return item, fmt.Sprintf("[resource %s]\n%s", r.URI, r.Text), len(r.Text)
		case mcp.BlobResourceContents:
			item := binaryItem("resource", r.MIMEType, r.Blob, b)
			item["uri"] = r.URI
			return item, fmt.Sprintf("[resource %s, %s, %d bytes base64]", r.URI, r.MIMEType, len(r.Blob)), len(r.Blob)
		}
	}
	raw, _ := json.Marshal(c)
	s, _ := b.Take(string(raw))
	return map[string]any{"type": "unknown", "raw": s}, s, len(raw)
}

// binaryItem keeps base64 data whole or not at all: a cut image is useless.
func binaryItem(kind, mime, data string, b *session.Budget) map[string]any {
	item := map[string]any{"type": kind, "mime_type": mime}
	if len(data) <= b.Left {
		b.Left -= len(data)
		item["data"] = data
	} else {
		item["truncated"] = true
		item["size"] = len(data)
	}
	return item
}

// objects returns the records for the environment and the UI. When the
// server gave structured content, its records are the rows (MCP servers
// send the text content as a copy of the same data, for old clients; the
// model still sees it in the result's text), followed by any non-text items
// (images, resources). Otherwise every content item is a row.
func (r *CallResult) objects() []map[string]any {
	if r.Structured == nil {
		return append([]map[string]any(nil), r.Content...)
	}
	v := r.Structured
	if raw, ok := v.(json.RawMessage); ok {
		var decoded any
		if json.Unmarshal(raw, &decoded) == nil {
			v = decoded
		}
	}
	objs := records(v)
	for _, c := range r.Content {
		if c["type"] != "text" {
			objs = append(objs, c)
		}
	}
	return objs
}

// records turns structured content into table rows without knowing the
// server: an array of objects is the rows; an object whose only array of
// objects is one field ({"todos": [...], "count": 2}) gives that array; an
// object with a single object field ({"todo": {...}}) gives that object;
// any other object is one row, and anything else a row {"value": v}.
func records(v any) []map[string]any {
	switch v := v.(type) {
	case []any:
		if rows, ok := objectList(v); ok {
			return rows
		}
	case map[string]any:
		var found []map[string]any
		lists := 0
		for _, fv := range v {
			if l, ok := fv.([]any); ok {
				if rows, ok := objectList(l); ok {
					found, lists = rows, lists+1
				}
			}
		}
		if lists == 1 {
			return found
		}
		if len(v) == 1 {
			for _, fv := range v {
				if m, ok := fv.(map[string]any); ok {
					return []map[string]any{m}
				}
			}
		}
		return []map[string]any{v}
	}
	return []map[string]any{{"value": v}}
}

// objectList reports whether every element of l is an object, and returns
// them.
func objectList(l []any) ([]map[string]any, bool) {
	rows := make([]map[string]any, 0, len(l))
	for _, e := range l {
		m, ok := e.(map[string]any)
		if !ok {
			return nil, false
		}
		rows = append(rows, m)
	}
	return rows, true
}

// resultType picks the frontend payload type: "document" for text only,
// "table" otherwise.
func resultType(r *CallResult) string {
	if r.Structured != nil {
		return "table"
	}
	for _, c := range r.Content {
		if c["type"] != "text" {
			return "table"
		}
	}
	return "document"
}
