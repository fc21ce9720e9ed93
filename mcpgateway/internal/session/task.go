package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/tools"
)

// A tool the server runs only as a task (MCP 2025-11-25: its
// execution.taskSupport is "required") is called as one. tools/call with a
// task answers at once with the task; tasks/get says how it goes: its
// status message becomes a status event of the call, and each answer that
// finds it still running moves the call's deadline on, as progress does,
// up to max_call_time. Once the task ended or waits for input, tasks/result
// gives the tool's result (and carries the server's questions to the user
// meanwhile), while tasks/get goes on watching the task until then. A call
// that ends any other way (the user stopped it, a deadline, a failed poll)
// cancels the task with tasks/cancel, and is never sent again: the server
// may have done some of the work.

// Bounds of the wait between two tasks/get, whatever pollInterval the
// server suggests; defaultTaskPoll when it suggests none.
const (
	minTaskPoll     = 50 * time.Millisecond
	maxTaskPoll     = 5 * time.Second
	defaultTaskPoll = 500 * time.Millisecond
)

// taskStarted wraps an error of a call whose task the server created: the
// call must not be retried on a new session, even when the session is gone.
type taskStarted struct{ err error }

func (t taskStarted) Error() string { return t.err.Error() }
func (t taskStarted) Unwrap() error { return t.err }

// callTask runs tool as a task on s for the call ac; ctx is the call's
// (deadline, cancellation, and ac for the server's questions).
func (c *Conn) callTask(ctx context.Context, s *Session, ac *activeCall, tool string, inputs map[string]any) (*mcp.CallToolResult, error) {
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
	if err != nil {
		c.cancelTask(s, created.Task.TaskId)
		return nil, taskStarted{err}
	}
	return res, nil
}

// awaitTask polls task until it ends or waits for input, then fetches its
// result.
func (c *Conn) awaitTask(ctx context.Context, s *Session, ac *activeCall, task mcp.Task) (*mcp.CallToolResult, error) {
	w := &taskWatch{c: c, s: s, ac: ac, id: task.TaskId}
	w.show(task)
	for {
		switch task.Status {
		case mcp.TaskStatusCompleted, mcp.TaskStatusFailed, mcp.TaskStatusInputRequired:
			return w.result(ctx, task)
		case mcp.TaskStatusCancelled:
			return w.cancelled(task), nil
		}
		if err := sleepCtx(ctx, pollWait(task)); err != nil {
			return nil, err
		}
		next, err := w.get(ctx)
		if err != nil {
			return nil, err
		}
		task = next
		ac.clock.extend() // the server still answers for the task: like progress
		w.show(task)
	}
}

// taskWatch follows one task of a call.
type taskWatch struct {
	c  *Conn
	s  *Session
	ac *activeCall
	id string

	// mu guards shown and reports: show runs on the poller too.
	mu      sync.Mutex
	shown   string
	reports int
}

// show relays the task's status message as a status event of its call,
// once per new message.
func (w *taskWatch) show(task mcp.Task) {
	msg := task.StatusMessage
	w.mu.Lock()
	if msg == "" || msg == w.shown {
		w.mu.Unlock()
		return
	}
	w.shown = msg
	w.reports++
	n := w.reports
	w.mu.Unlock()
	p := tools.ProgressPayload{CallID: w.ac.token, Server: w.ac.server, Tool: w.ac.tool, Progress: float64(n),
		Message: truncate(w.c.mask(msg), 200)}
	p.Text = progressText(p)
	w.ac.relay.progress(p)
}

// get sends one tasks/get.
func (w *taskWatch) get(ctx context.Context) (mcp.Task, error) {
	raw, err := w.c.taskRequest(ctx, w.s, "tasks/get "+w.id, mcp.MethodTasksGet, map[string]any{"taskId": w.id})
	if err != nil {
		return mcp.Task{}, err
	}
	var t mcp.Task
	if err := json.Unmarshal(raw, &t); err != nil {
		return mcp.Task{}, fmt.Errorf("tasks/get: decode the task: %w", err)
	}
	if t.Status == "" {
		return mcp.Task{}, fmt.Errorf("tasks/get %s: the answer has no status", w.id)
	}
	return t, nil
}

// result sends tasks/result, which the server answers once the task has
// ended; meanwhile a poller goes on with tasks/get, so that a task that
// waits for the user, then works on, keeps its deadline moving and its
// status lines coming.
func (w *taskWatch) result(ctx context.Context, task mcp.Task) (*mcp.CallToolResult, error) {
	pollCtx, stopPolling := context.WithCancel(ctx)
	var wg sync.WaitGroup
	if !task.Status.IsTerminal() {
		wg.Go(func() {
			for sleepCtx(pollCtx, pollWait(task)) == nil {
				next, err := w.get(pollCtx)
				if err != nil {
					return // tasks/result says what became of the task
				}
				if next.Status.IsTerminal() {
					return
				}
				task = next
				w.ac.clock.extend()
				w.show(task)
			}
		})
	}
	raw, err := w.c.taskRequest(ctx, w.s, "tasks/result "+w.id, mcp.MethodTasksResult, map[string]any{"taskId": w.id})
	stopPolling()
	wg.Wait()
	if err != nil {
		return nil, err
	}
	return mcp.ParseCallToolResult(&raw)
}

// cancelled is the result of a task the server cancelled: a tool error the
// model can read, not a failure of the server.
func (w *taskWatch) cancelled(task mcp.Task) *mcp.CallToolResult {
	msg := "the server cancelled the task"
	if task.StatusMessage != "" {
		msg += ": " + w.c.mask(task.StatusMessage)
	}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{mcp.NewTextContent(msg)}}
}

// pollWait is how long to wait before asking after task again.
func pollWait(task mcp.Task) time.Duration {
	if task.PollInterval == nil {
		return defaultTaskPoll
	}
	return min(max(time.Duration(*task.PollInterval)*time.Millisecond, minTaskPoll), maxTaskPoll)
}

// sleepCtx waits d, or returns ctx's error once it ends first.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// taskRequest is conn.request guarded against a wedged stdio child.
func (c *Conn) taskRequest(ctx context.Context, s *Session, what string, method mcp.MCPMethod, params map[string]any) (json.RawMessage, error) {
	stop := s.WedgeGuard(ctx, what)
	defer stop()
	return c.request(ctx, s, method, params)
}

// cancelTask sends tasks/cancel for a task whose call ended, on a goroutine
// the conn owns, bounded by the call timeout: the caller has its answer
// already, and the server should stop working for nobody.
func (c *Conn) cancelTask(s *Session, id string) {
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
			c.logger.Warn("tasks/cancel failed", logKeyTask, id, logKeyErr, err)
			return
		}
		c.logger.Info("task cancelled", logKeyTask, id)
	})
}

// isTaskStarted reports whether err is of a call whose task exists.
func isTaskStarted(err error) bool {
	var t taskStarted
	return errors.As(err, &t)
}
