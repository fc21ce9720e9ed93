package mcpgateway

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/tools"
)

// A tool the server runs only as a task (MCP 2025-11-25: its
// execution.taskSupport is "required") is called as one. tools/call with a
// task answers at once with the task; tasks/get says how it goes: its
// status message becomes a status event of the call, and each poll that
// finds it still working moves the call's deadline on, as progress does,
// up to max_call_time. Once the task ended or waits for input, tasks/result
// gives the tool's result (and carries the server's questions to the user
// meanwhile). A call whose ctx ends first cancels the task with
// tasks/cancel.

// Bounds of the wait between two tasks/get, whatever pollInterval the
// server suggests; defaultTaskPoll when it suggests none.
const (
	minTaskPoll     = 50 * time.Millisecond
	maxTaskPoll     = 5 * time.Second
	defaultTaskPoll = 500 * time.Millisecond
)

// callTask runs tool as a task on s for the call ac; ctx is the call's
// (deadline, cancellation, and ac for the server's questions).
func (c *conn) callTask(ctx context.Context, s *session, ac *activeCall, tool string, inputs map[string]any) (*mcp.CallToolResult, error) {
	maxCall, _ := c.cfg.Limits()
	raw, err := c.taskRequest(ctx, s, "call "+tool, mcp.MethodToolsCall, map[string]any{
		"name":      tool,
		"arguments": inputs,
		"_meta":     map[string]any{"progressToken": ac.token},
		"task":      map[string]any{"ttl": maxCall.Milliseconds()},
	})
	if err != nil {
		return nil, err
	}
	var created struct {
		Task *mcp.Task `json:"task"`
	}
	if err := json.Unmarshal(raw, &created); err != nil {
		return nil, fmt.Errorf("tools/call: decode the task: %w", err)
	}
	if created.Task == nil || created.Task.TaskId == "" {
		return mcp.ParseCallToolResult(&raw) // run at once after all
	}
	res, err := c.awaitTask(ctx, s, ac, *created.Task)
	if err != nil && ctx.Err() != nil {
		c.cancelTask(s, created.Task.TaskId)
	}
	return res, err
}

// awaitTask polls task until it ends or waits for input, then fetches its
// result.
func (c *conn) awaitTask(ctx context.Context, s *session, ac *activeCall, task mcp.Task) (*mcp.CallToolResult, error) {
	id := task.TaskId
	shown, reports := "", 0
	for {
		if msg := task.StatusMessage; msg != "" && msg != shown {
			shown = msg
			reports++
			c.taskStatus(ac, reports, msg)
		}
		switch task.Status {
		case mcp.TaskStatusCompleted, mcp.TaskStatusFailed, mcp.TaskStatusInputRequired:
			raw, err := c.taskRequest(ctx, s, "tasks/result "+id, mcp.MethodTasksResult, map[string]any{"taskId": id})
			if err != nil {
				return nil, err
			}
			return mcp.ParseCallToolResult(&raw)
		case mcp.TaskStatusCancelled:
			return nil, fmt.Errorf("the server cancelled task %s (%s)", id, task.StatusMessage)
		}
		wait := defaultTaskPoll
		if task.PollInterval != nil {
			wait = min(max(time.Duration(*task.PollInterval)*time.Millisecond, minTaskPoll), maxTaskPoll)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		raw, err := c.taskRequest(ctx, s, "tasks/get "+id, mcp.MethodTasksGet, map[string]any{"taskId": id})
		if err != nil {
			return nil, err
		}
		var next mcp.Task
		if err := json.Unmarshal(raw, &next); err != nil {
			return nil, fmt.Errorf("tasks/get: decode the task: %w", err)
		}
		if next.Status == "" {
			return nil, fmt.Errorf("tasks/get %s: the answer has no status", id)
		}
		task = next
		ac.extend() // the server still answers for the task: like progress
	}
}

// taskRequest is conn.request guarded against a wedged stdio child.
func (c *conn) taskRequest(ctx context.Context, s *session, what string, method mcp.MCPMethod, params map[string]any) (json.RawMessage, error) {
	stop := s.wedgeGuard(ctx, what)
	defer stop()
	return c.request(ctx, s, method, params)
}

// taskStatus relays a task's status message as a status event of its call.
func (c *conn) taskStatus(ac *activeCall, n int, msg string) {
	p := tools.ProgressPayload{CallID: ac.token, Server: ac.server, Tool: ac.tool, Progress: float64(n),
		Message: truncate(c.mask(msg), 200)}
	p.Text = progressText(p)
	ac.emit.Emit(context.Background(), tools.Event{Type: tools.EventStatus, Payload: p})
}

// cancelTask sends tasks/cancel for a task whose call ended, on a goroutine
// the conn owns, bounded by the call timeout: the caller has its answer
// already, and the server should stop working for nobody.
func (c *conn) cancelTask(s *session, id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.goFunc(func() {
		_, timeout := c.cfg.Timeouts()
		ctx, cancel := context.WithTimeout(c.lifetime, timeout)
		defer cancel()
		if _, err := c.taskRequest(ctx, s, "tasks/cancel "+id, mcp.MethodTasksCancel, map[string]any{"taskId": id}); err != nil {
			c.logger.Warn("tasks/cancel failed", "task", id, "err", err)
			return
		}
		c.logger.Info("task cancelled", "task", id)
	})
}
