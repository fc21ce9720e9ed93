package main

import (
	"context"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// The hooks server-stateless calls to see list changes reach a client's
// subscriptions/listen stream (SEP-2575): each call of a trigger adds its
// dynamic tool or prompt, or takes it away again, and mcp-go tells the
// server's listeners (here the gateway, which passes it on to the
// endpoint's listeners).

const (
	dynamicTool   = "test_dynamic_tool"
	dynamicPrompt = "test_dynamic_prompt"
)

// addTriggerTools registers test_trigger_tool_change and
// test_trigger_prompt_change.
func addTriggerTools(s *mcpserver.MCPServer) {
	var mu sync.Mutex
	var toolOn, promptOn bool
	s.AddTool(mcp.NewTool("test_trigger_tool_change", mcp.WithDescription("Adds "+dynamicTool+", or takes it away")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			mu.Lock()
			defer mu.Unlock()
			if toolOn = !toolOn; toolOn {
				s.AddTool(mcp.NewTool(dynamicTool, mcp.WithDescription("Comes and goes")),
					func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("here"), nil })
				return text("added " + dynamicTool), nil
			}
			s.DeleteTools(dynamicTool)
			return text("removed " + dynamicTool), nil
		})
	s.AddTool(mcp.NewTool("test_trigger_prompt_change", mcp.WithDescription("Adds "+dynamicPrompt+", or takes it away")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			mu.Lock()
			defer mu.Unlock()
			if promptOn = !promptOn; promptOn {
				s.AddPrompt(mcp.NewPrompt(dynamicPrompt, mcp.WithPromptDescription("Comes and goes")),
					func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
						return mcp.NewGetPromptResult("", []mcp.PromptMessage{mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("here"))}), nil
					})
				return text("added " + dynamicPrompt), nil
			}
			s.DeletePrompts(dynamicPrompt)
			return text("removed " + dynamicPrompt), nil
		})
}
