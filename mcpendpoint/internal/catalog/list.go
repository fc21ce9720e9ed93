package catalog

import (
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
	"github.com/elysia-go/elysia/tools"
)

// Names the endpoint gives its own tools.
const (
	SearchName = "search_tools"
	CallName   = "call_tool"
	AskName    = "ask"
	// SignInName stands for the tools of a server the user must sign in
	// to first (named like its tools: <prefix><separator>sign_in).
	SignInName = "sign_in"
)

// Mode returns the mode c is listed in: auto resolved by its size.
func Mode(ex mcpconfig.Expose, c *Catalog) string {
	if ex.Mode != mcpconfig.ExposeAuto {
		return ex.Mode
	}
	if c != nil && len(c.entries) > ex.MaxTools {
		return mcpconfig.ExposeSearch
	}
	return mcpconfig.ExposeTools
}

// toolOf is en as listed: its schemas raw and its description and
// annotations as the server gave them.
func toolOf(en *Entry) mcp.Tool {
	t := mcp.Tool{Name: en.Name, Description: en.Info.Description, RawInputSchema: en.Info.InputSchema}
	if len(en.Info.OutputSchema) > 0 {
		t.RawOutputSchema = en.Info.OutputSchema
	}
	if len(en.Info.Annotations) > 0 {
		_ = json.Unmarshal(en.Info.Annotations, &t.Annotations) // a bad object leaves them out
	}
	return t
}

// GatewayTool is a gateway tool (mcp_<server>) as the tree has it.
func GatewayTool(t tools.Tool) mcp.Tool {
	props := map[string]any{}
	var required []string
	for _, in := range t.Inputs() {
		p := map[string]any{"type": in.Type, "description": in.Description}
		if in.Default != nil {
			p["default"] = in.Default
		}
		if len(in.Enum) > 0 {
			p["enum"] = in.Enum
		}
		props[in.Name] = p
		if in.Required {
			required = append(required, in.Name)
		}
	}
	schema := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		schema["required"] = required
	}
	raw, _ := json.Marshal(schema) // plain values: cannot fail
	return mcp.Tool{Name: t.Name(), Description: t.Description(), RawInputSchema: raw}
}

// SearchTools are the tools listed in search mode: search_tools and
// call_tool.
func SearchTools() []mcp.Tool {
	return []mcp.Tool{
		{
			Name: SearchName,
			Description: "Find tools among every server of this service by words of their name or description. " +
				"Returns the best matches with their input schemas; call one with call_tool.",
			RawInputSchema: json.RawMessage(`{"type":"object","properties":{` +
				`"query":{"type":"string","description":"words to look for in tool names and descriptions"},` +
				`"server":{"type":"string","description":"only this server's tools"},` +
				`"limit":{"type":"integer","minimum":1,"maximum":50,"description":"most tools returned (default 10)"}},` +
				`"required":["query"]}`),
			Annotations: mcp.ToolAnnotation{ReadOnlyHint: mcp.ToBoolPtr(true)},
		},
		{
			Name:        CallName,
			Description: "Call a tool that search_tools found, by its name, with arguments matching its input schema.",
			RawInputSchema: json.RawMessage(`{"type":"object","properties":{` +
				`"name":{"type":"string","description":"the tool's name as search_tools gave it"},` +
				`"arguments":{"type":"object","description":"the tool's arguments"}},"required":["name"]}`),
		},
	}
}

// AskTool is the ask tool, listed last when the endpoint has an agent.
func AskTool() mcp.Tool {
	return mcp.Tool{
		Name: AskName,
		Description: "Ask Elysia's decision-tree agent a question: it chooses and calls the tools of this service's servers " +
			"itself and answers in text. Give conversation_id to go on with an earlier conversation.",
		RawInputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"question":{"type":"string","description":"the question or task"},` +
			`"conversation_id":{"type":"string","description":"an earlier conversation to continue"}},"required":["question"]}`),
	}
}
