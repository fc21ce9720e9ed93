package main

import (
	"context"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// The tools of the Tasks extension's scenarios (SEP-2663). The gateway
// runs them as plain calls: the tasks are the aggregate endpoint's, which
// decides from each tool's execution.taskSupport (taskSupport) whether a
// call becomes one. The tools that ask their client do it with
// input_required results (mrtr.go): confirm_delete and multi_input after
// a short look at their work, so that the endpoint has made the call a
// task by then; test_tool_with_task at once, so that its first question
// is answered before the call is one.

// lookup is how long confirm_delete and multi_input work before they ask.
const lookup = 300 * time.Millisecond

// taskSupport is the execution.taskSupport each task tool lists with.
// mcp-go refuses a call of a tool registered as "required" that is not
// task-augmented in its own (2025-11-25) way, so the tools are registered
// without one and listed with it (listTaskSupport).
var taskSupport = map[string]mcp.TaskSupport{
	"slow_compute":        mcp.TaskSupportOptional,
	"failing_job":         mcp.TaskSupportRequired,
	"protocol_error_job":  mcp.TaskSupportOptional,
	"confirm_delete":      mcp.TaskSupportOptional,
	"multi_input":         mcp.TaskSupportOptional,
	"test_tool_with_task": mcp.TaskSupportRequired,
}

// listTaskSupport lists the task tools with their taskSupport.
func listTaskSupport(_ context.Context, tools []mcp.Tool) []mcp.Tool {
	for i := range tools {
		if ts, ok := taskSupport[tools[i].Name]; ok {
			tools[i].Execution = &mcp.ToolExecution{TaskSupport: ts}
		}
	}
	return tools
}

// confirmForm is an elicitation of a yes or no.
func confirmForm(message string) mcp.ElicitationParams {
	return mcp.ElicitationParams{Message: message, RequestedSchema: map[string]any{
		"type":       "object",
		"properties": map[string]any{"confirm": map[string]any{"type": "boolean"}, "name": map[string]any{"type": "string"}},
	}}
}

// addTaskTools registers greet and the task tools.
func addTaskTools(s *mcpserver.MCPServer) {
	s.AddTool(mcp.NewTool("greet", mcp.WithDescription("Greets; never a task"),
		mcp.WithString("name", mcp.Required(), mcp.Description("Who to greet"))),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text(fmt.Sprintf("Hello, %s!", req.GetString("name", ""))), nil
		})
	s.AddTool(mcp.NewTool("slow_compute", mcp.WithDescription("Sleeps seconds, then answers"),
		mcp.WithNumber("seconds", mcp.Description("How long to work")), mcp.WithString("label", mcp.Description("A label to echo"))),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			secs := req.GetFloat("seconds", 0)
			if err := sleep(ctx, time.Duration(secs*float64(time.Second))); err != nil {
				return nil, err
			}
			return text(fmt.Sprintf("Computed %s in %gs", req.GetString("label", ""), secs)), nil
		})
	s.AddTool(mcp.NewTool("failing_job", mcp.WithDescription("Fails with a tool error after about a second")),
		func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if err := sleep(ctx, time.Second); err != nil {
				return nil, err
			}
			return mcp.NewToolResultError("the job failed"), nil
		})
	s.AddTool(mcp.NewTool("protocol_error_job", mcp.WithDescription("Panics after about a second: a protocol error")),
		func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if err := sleep(ctx, time.Second); err != nil {
				return nil, err
			}
			panic("protocol_error_job: the fixture's deliberate failure")
		})
	s.AddTool(mcp.NewTool("confirm_delete", mcp.WithDescription("Asks before it deletes a file"),
		mcp.WithString("filename", mcp.Description("The file to delete"))),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			name := req.GetString("filename", "")
			if r := mcpserver.ElicitationResponse(req.Params.InputResponses, "confirm"); r != nil {
				if c, _ := r.Content.(map[string]any); r.Action == mcp.ElicitationResponseActionAccept && c["confirm"] == true {
					return text("Deleted " + name), nil
				}
				return text("Kept " + name), nil
			}
			if err := sleep(ctx, lookup); err != nil {
				return nil, err
			}
			return mcpserver.NewInputRequestBuilder("").Elicit("confirm", confirmForm("Delete "+name+"?")).ToolResult(), nil
		})
	s.AddTool(mcp.NewTool("multi_input", mcp.WithDescription("Asks two things at once")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			first := mcpserver.ElicitationResponse(req.Params.InputResponses, "first")
			second := mcpserver.ElicitationResponse(req.Params.InputResponses, "second")
			if first != nil && second != nil {
				return text(fmt.Sprintf("Answers: %v and %v", first.Content, second.Content)), nil
			}
			if err := sleep(ctx, lookup); err != nil {
				return nil, err
			}
			b := mcpserver.NewInputRequestBuilder("")
			if first == nil {
				b.Elicit("first", confirmForm("First question"))
			}
			if second == nil {
				b.Elicit("second", confirmForm("Second question"))
			}
			return b.ToolResult(), nil
		})
	s.AddTool(mcp.NewTool("test_tool_with_task", mcp.WithDescription("Asks a name, then works on as a task")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			name, ok := accepted(req.Params.InputResponses, "user_name", "name")
			if !ok {
				return mcpserver.NewInputRequestBuilder("").Elicit("user_name", form("What is your name?", "name")).ToolResult(), nil
			}
			if err := sleep(ctx, time.Second); err != nil {
				return nil, err
			}
			return text(fmt.Sprintf("Task done for %v", name)), nil
		})
}
