package mcpendpoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/mcpendpoint/internal/held"
	"github.com/elysia-go/elysia/mcpendpoint/internal/jsonrpc"
	"github.com/elysia-go/elysia/mcpendpoint/internal/reply"
	"github.com/elysia-go/elysia/mcpendpoint/internal/sessions"
	"github.com/elysia-go/elysia/mcpendpoint/internal/tasks"
)

// The Tasks extension of 2026-07-28 (SEP-2663), for a client that declares
// it. The endpoint decides which calls become tasks: a 2026-07-28
// tools/call of a tool its server lists with execution.taskSupport runs as
// any held call (held.go), and is answered as it is if it ends within
// taskGrace; its questions within taskGrace are an input_required result
// as for any call. Past taskGrace (and always for a tool whose support is
// "required") the call is a task: its row is written in the TaskStore
// before the reply (resultType "task"), and a watcher on this replica
// writes its questions (input_required with inputRequests) and its end
// (completed, or failed with the protocol error) to the row, and reads the
// row for a cancel and for the answers tasks/update left there. tasks/get,
// tasks/update and tasks/cancel read and move the row, so any replica
// answers them; they are answered before mcp-go, which knows only the
// 2025-11-25 tasks. A task is its user's: another's id is unknown (-32602).

// tasksExtension names the Tasks extension in capabilities.extensions.
const tasksExtension = "io.modelcontextprotocol/tasks"

// Timings of tasks.
const (
	// taskGrace is how long a task-eligible call may take to be answered
	// as it is.
	taskGrace = 100 * time.Millisecond
	// taskPoll is how often a watcher reads its task's row for a cancel
	// or answers from another replica (this replica's nudge it at once).
	taskPoll = 200 * time.Millisecond
	// taskTTL is how long a task is kept after it was created.
	taskTTL = time.Hour
)

// ErrTaskNotFound is matched by a TaskStore's error for a task that is
// not there, past its expiry, or another user's.
var ErrTaskNotFound = tasks.ErrNotFound

// TaskState is one task as every replica sees it: its status and status
// message, its result, the questions its client has not answered and the
// answers not yet handed to its call, its revision, and when it was
// created, last moved, and expires.
type TaskState = tasks.State

// TaskStore keeps the tasks where every replica reads them: CreateTask,
// Task (an error matching ErrTaskNotFound for one not there, past its
// expiry, or another user's) and SwapTask, which moves a task only from
// the revision read.
type TaskStore = tasks.Store

// taskPolicy is what decides whether a call may be a task.
type taskPolicy struct {
	// support is the tool's execution.taskSupport.
	support string
	// declared: the request's client declared the extension.
	declared bool
	// reply takes the task reply over HTTP; nil elsewhere.
	reply *reply.Reply
}

// eligible reports whether the call may become a task.
func (p taskPolicy) eligible() bool {
	return p.declared && p.reply != nil && (p.support == string(mcp.TaskSupportOptional) || p.support == string(mcp.TaskSupportRequired))
}

// policyOf is the taskPolicy of the 2026-07-28 tools/call req of user.
func (e *Endpoint) policyOf(ctx context.Context, user string, req mcp.CallToolRequest) taskPolicy {
	var p taskPolicy
	p.reply = reply.FromContext(ctx)
	if info := mcpserver.RequestProtocolInfoFromContext(ctx); info != nil && info.ClientCapabilities != nil {
		_, p.declared = info.ClientCapabilities.Extensions[tasksExtension]
	}
	if _, en := e.lookup(ctx, user, clientToolName(req)); en != nil {
		p.support = en.Info.TaskSupport
	}
	return p
}

// errNeedsTasks answers a call of a tool that runs only as a task from a
// client without the extension.
func (e *Endpoint) errNeedsTasks(p taskPolicy, name string) error {
	msg := fmt.Sprintf("tool %q runs only as a task: declare the %s extension", name, tasksExtension)
	if p.reply != nil {
		p.reply.SetError(mcp.MISSING_REQUIRED_CLIENT_CAPABILITY, msg,
			map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{tasksExtension: map[string]any{}}}})
	}
	return mcp.MissingRequiredClientCapabilityError{Capability: "extensions." + tasksExtension}
}

// awaitTask makes w the request waiting on h and waits for the call's next
// event: its end, or questions for the client, answered as an
// input_required result with a sealed requestState. A request that ends
// first (the client left) cancels the call; one another request took the
// call from gets an error. A call that may become a task (p) is made one
// after taskGrace, or at its end when it runs only as a task.
func (e *Endpoint) awaitTask(ctx context.Context, h *held.Call, w *held.Waiter, p taskPolicy) (*mcp.CallToolResult, error) {
	var grace <-chan time.Time // nil, never ready, for a call that stays a call
	mustTask := false
	if p.eligible() {
		t := time.NewTimer(taskGrace)
		defer t.Stop()
		grace, mustTask = t.C, p.support == string(mcp.TaskSupportRequired)
	}
	next, err := h.Await(ctx, w, grace, mustTask)
	switch next.Event {
	case held.Ended:
		e.held.forget(h)
		return next.Result, next.Err
	case held.Asked, held.Exhausted:
		return e.inputRequired(h, next)
	case held.Released:
		return e.makeTask(ctx, h, p)
	case held.Left:
		e.abandon(h, w)
	}
	return nil, err
}

// makeTask makes the call h, which Await released, a task: its row first,
// then its watcher, then the reply.
func (e *Endpoint) makeTask(ctx context.Context, h *held.Call, p taskPolicy) (*mcp.CallToolResult, error) {
	id := tasks.NewID()
	created := time.Now()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.storeWait)
	err := e.tasks.CreateTask(sctx, id, h.User(), created.Add(taskTTL))
	cancel()
	if err != nil {
		h.Cancel()
		e.held.forget(h)
		return nil, fmt.Errorf("the call could not be kept as a task: %w", err)
	}
	h.BecameTask(id)
	nudge := e.taskNudge(id)
	if !e.held.run.Go(func() { e.watchTask(h, id, nudge) }) {
		e.dropNudge(id)
		h.Cancel()
		e.held.forget(h)
		return nil, errors.New("the MCP endpoint is closing: call the tool again")
	}
	b, _ := json.Marshal(tasks.Envelope(id, TaskState{Status: tasks.Working, Created: created, Updated: created, Expires: created.Add(taskTTL)}, "task"))
	p.reply.SetResult(b)
	return &mcp.CallToolResult{}, nil
}

// taskNudge returns the channel that wakes task id's watcher here.
func (e *Endpoint) taskNudge(id string) chan struct{} {
	e.nudgeMu.Lock()
	defer e.nudgeMu.Unlock()
	c := make(chan struct{}, 1)
	e.nudges[id] = c
	return c
}

func (e *Endpoint) dropNudge(id string) {
	e.nudgeMu.Lock()
	defer e.nudgeMu.Unlock()
	delete(e.nudges, id)
}

// nudgeTask wakes task id's watcher if it runs here.
func (e *Endpoint) nudgeTask(id string) {
	e.nudgeMu.Lock()
	defer e.nudgeMu.Unlock()
	if c := e.nudges[id]; c != nil {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

// watchTask keeps task id's row up with the call h until the call ends
// or the task is cancelled.
func (e *Endpoint) watchTask(h *held.Call, id string, nudge chan struct{}) {
	defer e.dropNudge(id)
	defer e.held.forget(h)
	ctx := e.held.life
	tick := time.NewTicker(taskPoll)
	defer tick.Stop()
	written := ""
	for {
		if e.takeAnswers(ctx, h, id) {
			return // cancelled
		}
		s := h.Snapshot()
		if s.Done {
			e.endTask(ctx, h.User(), id, s.Result, s.Err, s.Failure)
			return
		}
		b, _ := json.Marshal(s.Requests)
		if sig := string(b); sig != written {
			if e.writeQuestions(ctx, h.User(), id, s.Requests) == nil {
				written = sig
			}
		}
		select {
		case <-s.Changed:
		case <-nudge:
		case <-tick.C:
		case <-ctx.Done():
			h.Cancel()
			return
		}
	}
}

// takeAnswers hands the answers left in task id's row to the questions of
// h, and reports whether the task was cancelled (h then is too).
func (e *Endpoint) takeAnswers(ctx context.Context, h *held.Call, id string) (cancelled bool) {
	t, err := e.tasks.Task(ctx, id, h.User())
	if err != nil {
		if errors.Is(err, ErrTaskNotFound) {
			h.Cancel()
			return true
		}
		return false // the next round tries again
	}
	if t.Status == tasks.Cancelled {
		h.Cancel()
		return true
	}
	if t.Answers == "" {
		return false
	}
	var rs mcp.InputResponses
	if json.Unmarshal([]byte(t.Answers), &rs) != nil {
		rs = nil
	}
	h.Hand(rs)
	_, _ = tasks.Move(ctx, e.tasks, id, h.User(), func(t *TaskState) bool {
		var left map[string]json.RawMessage
		_ = json.Unmarshal([]byte(t.Answers), &left)
		for key := range rs {
			delete(left, key)
		}
		t.Answers = ""
		if len(left) > 0 {
			b, _ := json.Marshal(left)
			t.Answers = string(b)
		}
		return true
	})
	return false
}

// writeQuestions writes the questions of task id not answered yet.
func (e *Endpoint) writeQuestions(ctx context.Context, user, id string, reqs mcp.InputRequests) error {
	_, err := tasks.Move(ctx, e.tasks, id, user, func(t *TaskState) bool {
		if tasks.Terminal(t.Status) {
			return false
		}
		var answered map[string]json.RawMessage
		_ = json.Unmarshal([]byte(t.Answers), &answered)
		open := make(mcp.InputRequests, len(reqs))
		for key, r := range reqs {
			if _, ok := answered[key]; !ok {
				open[key] = r
			}
		}
		t.Status, t.InputRequests = tasks.Working, ""
		if len(open) > 0 {
			b, _ := json.Marshal(open)
			t.Status, t.InputRequests = tasks.InputRequired, string(b)
		}
		return true
	})
	return err
}

// endTask writes the end of task id: completed with res, or failed with
// the call's error or its server's.
func (e *Endpoint) endTask(ctx context.Context, user, id string, res *mcp.CallToolResult, err, failure error) {
	var next TaskState
	switch {
	case err != nil || failure != nil || res == nil:
		if err == nil {
			err = failure
		}
		if err == nil {
			err = errors.New("the call ended without a result")
		}
		b, _ := json.Marshal(jsonrpc.ErrorObject{Code: mcp.INTERNAL_ERROR, Message: err.Error()})
		next = TaskState{Status: tasks.Failed, StatusMessage: err.Error(), Result: string(b)}
	default:
		b, merr := json.Marshal(res)
		if merr != nil {
			b, _ = json.Marshal(jsonrpc.ErrorObject{Code: mcp.INTERNAL_ERROR, Message: "the call's result does not encode"})
			next = TaskState{Status: tasks.Failed, Result: string(b)}
		} else {
			next = TaskState{Status: tasks.Completed, Result: string(b)}
		}
	}
	if _, werr := tasks.Move(ctx, e.tasks, id, user, func(t *TaskState) bool {
		if tasks.Terminal(t.Status) {
			return false
		}
		next.Revision = t.Revision
		*t = TaskState{Status: next.Status, StatusMessage: next.StatusMessage, Result: next.Result, Revision: t.Revision}
		return true
	}); werr != nil {
		e.logger.Warn("a task's end could not be written", logKeyUser, user, logKeyErr, werr)
	}
}

// noteFailure records that the server of ctx's held call answered it
// with an error (a protocol error, not a tool's): a task of it fails.
func noteFailure(ctx context.Context, err error) {
	if h := held.FromContext(ctx); h != nil && ctx.Err() == nil {
		h.NoteFailure(err)
	}
}

// taskParams are the params of a tasks/get, tasks/update or tasks/cancel.
type taskParams struct {
	TaskID         string                     `json:"taskId"`
	InputResponses map[string]json.RawMessage `json:"inputResponses"`
}

// serveTaskMethod answers a 2026-07-28 POST of tasks/get, tasks/update or
// tasks/cancel of q's user and reports true, or leaves it for mcp-go.
func (e *Endpoint) serveTaskMethod(w http.ResponseWriter, q *request) bool {
	r, req, user, method := q.R, q.Msg, q.User, q.Msg.Method
	var params taskParams
	if !req.IsRequest() || req.DecodeParams(&params) != nil || req.Meta().ProtocolVersion != r.Header.Get(mcp.HeaderProtocolVersion) {
		return false // mcp-go says what is wrong with it
	}
	var caps struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	_ = json.Unmarshal(req.Meta().ClientCapabilities, &caps)
	reply := func(status int, b []byte) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(append(b, '\n')) // a client gone: nothing to tell
	}
	fail := func(code int, msg string, data any) {
		reply(http.StatusBadRequest, jsonrpc.ErrorResponse(req.ID, code, msg, data))
	}
	if name := r.Header.Get(mcp.HeaderName); name != "" && name != params.TaskID {
		fail(mcp.HEADER_MISMATCH, fmt.Sprintf("the Mcp-Name header %q does not match params.taskId %q", name, params.TaskID), nil)
		return true
	}
	if _, ok := caps.Extensions[tasksExtension]; !ok {
		fail(mcp.MISSING_REQUIRED_CLIENT_CAPABILITY, method+" needs the "+tasksExtension+" extension in the request's client capabilities",
			map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{tasksExtension: map[string]any{}}}})
		return true
	}
	id := params.TaskID
	if id == "" {
		fail(mcp.INVALID_PARAMS, method+" needs params.taskId", nil)
		return true
	}
	ctx, cancel := context.WithTimeout(r.Context(), e.storeWait)
	defer cancel()
	var t TaskState
	var err error
	switch method {
	case "tasks/get":
		t, err = e.tasks.Task(ctx, id, user)
	case "tasks/cancel":
		t, err = tasks.Move(ctx, e.tasks, id, user, func(t *TaskState) bool {
			if tasks.Terminal(t.Status) {
				return false
			}
			*t = TaskState{Status: tasks.Cancelled, StatusMessage: "cancelled by its client", Revision: t.Revision}
			return true
		})
		e.nudgeTask(id)
	case "tasks/update":
		t, err = tasks.Move(ctx, e.tasks, id, user, func(t *TaskState) bool { return tasks.TakeUpdate(t, params.InputResponses) })
		e.nudgeTask(id)
	}
	switch {
	case errors.Is(err, ErrTaskNotFound):
		fail(mcp.INVALID_PARAMS, fmt.Sprintf("unknown task %q", id), nil)
		return true
	case err != nil:
		e.logger.Warn("a task could not be read or moved: answered 503", logKeyErr, err)
		sessions.WriteStoreDown(w)
		return true
	}
	if method != "tasks/get" {
		reply(http.StatusOK, jsonrpc.Response(req.ID, map[string]any{"resultType": "complete"}))
		return true
	}
	res := tasks.Envelope(id, t, "complete")
	switch t.Status {
	case tasks.InputRequired:
		res["inputRequests"] = json.RawMessage(t.InputRequests)
	case tasks.Completed:
		res["result"] = json.RawMessage(t.Result)
	case tasks.Failed:
		res["error"] = json.RawMessage(t.Result)
	}
	reply(http.StatusOK, jsonrpc.Response(req.ID, res))
	return true
}
