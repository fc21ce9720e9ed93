package main

import (
	"context"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// The hooks server-stateless calls to see list changes reach a client's
// subscriptions/listen stream (SEP-2575): each call of a trigger takes its
// dynamic tool or prompt away, or adds it back, and mcp-go tells the
// server's listeners (here the gateway, which passes it on to the
// endpoint's listeners). The tool is there from the start: the gateway
// pins a server's tools when it first lists them and holds back a tool
// that comes later until an operator approves it, while one that comes
// back as it was pinned is listed at once.

const (
	dynamicTool   = "test_dynamic_tool"
	dynamicPrompt = "test_dynamic_prompt"
)

// addTriggerTools registers test_trigger_tool_change and
// test_trigger_prompt_change.
func addTriggerTools(s *mcpserver.MCPServer) {
	var mu sync.Mutex
	toolOn, promptOn := true, true
	addTool := func() {
		s.AddTool(mcp.NewTool(dynamicTool, mcp.WithDescription("Comes and goes")),
			func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("here"), nil })
	}
	addPrompt := func() {
		s.AddPrompt(mcp.NewPrompt(dynamicPrompt, mcp.WithPromptDescription("Comes and goes")),
			func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				return mcp.NewGetPromptResult("", []mcp.PromptMessage{mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("here"))}), nil
			})
	}
	addTool()
	addPrompt()
	s.AddTool(mcp.NewTool("test_trigger_tool_change", mcp.WithDescription("Takes "+dynamicTool+" away, or adds it back")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			mu.Lock()
			defer mu.Unlock()
			if toolOn = !toolOn; toolOn {
				addTool()
				return text("added " + dynamicTool), nil
			}
			s.DeleteTools(dynamicTool)
			return text("removed " + dynamicTool), nil
		})
	s.AddTool(mcp.NewTool("test_trigger_prompt_change", mcp.WithDescription("Takes "+dynamicPrompt+" away, or adds it back")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			mu.Lock()
			defer mu.Unlock()
			if promptOn = !promptOn; promptOn {
				addPrompt()
				return text("added " + dynamicPrompt), nil
			}
			s.DeletePrompts(dynamicPrompt)
			return text("removed " + dynamicPrompt), nil
		})
}
