package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// handlers implements the todo tools on a store. Bad input and unknown ids
// become isError results the model can act on; only a failing database is a
// Go error (a JSON-RPC error for the client).
type handlers struct {
	store  store
	logger *slog.Logger
}

// oneResult is the structured content of tools that return one todo.
type oneResult struct {
	Todo todo `json:"todo"`
}

// manyResult is the structured content of tools that return a list.
type manyResult struct {
	Todos []todo `json:"todos"`
	Count int    `json:"count"`
}

func (h *handlers) create(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	a, err := parseArgs(req)
	if err != nil {
		return argResult(err), nil
	}
	var title, desc, due *string
	var prio *int
	var tags *[]string
	if err := firstErr(
		a.str("title", true, &title),
		a.str("description", false, &desc),
		a.priority(&prio),
		a.strings("tags", &tags),
		a.date("due_date", &due),
	); err != nil {
		return argResult(err), nil
	}
	if title == nil {
		return argResult(&argError{Field: "title", Msg: "is required"}), nil
	}
	t := newTodo{Title: strings.TrimSpace(*title), Priority: defaultPriority, DueDate: due}
	if desc != nil {
		t.Description = *desc
	}
	if prio != nil {
		t.Priority = *prio
	}
	if tags != nil {
		t.Tags = *tags
	}
	got, err := h.store.Create(ctx, t)
	if err != nil {
		return nil, err
	}
	return mcp.NewToolResultStructured(oneResult{Todo: got}, "Created todo "+describe(got)), nil
}

func (h *handlers) list(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	a, err := parseArgs(req)
	if err != nil {
		return argResult(err), nil
	}
	var status, before, after *string
	var prio *int
	var tags *[]string
	if err := firstErr(
		a.status(&status),
		a.priority(&prio),
		a.strings("tags", &tags),
		a.date("due_date_before", &before),
		a.date("due_date_after", &after),
	); err != nil {
		return argResult(err), nil
	}
	var f filter
	f.Status = deref(status)
	f.Priority = deref(prio)
	f.DueBefore = deref(before)
	f.DueAfter = deref(after)
	if tags != nil {
		f.Tags = normalizeTags(*tags)
	}
	if f.DueBefore != "" && f.DueAfter != "" && f.DueAfter > f.DueBefore {
		return argResult(&argError{Field: "due_date_after",
			Msg: fmt.Sprintf("%s is later than due_date_before %s, so nothing can match", f.DueAfter, f.DueBefore)}), nil
	}
	return h.many(ctx, f, "")
}

func (h *handlers) search(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	a, err := parseArgs(req)
	if err != nil {
		return argResult(err), nil
	}
	var query, status *string
	var prio *int
	if err := firstErr(
		a.str("query", true, &query),
		a.status(&status),
		a.priority(&prio),
	); err != nil {
		return argResult(err), nil
	}
	if query == nil {
		return argResult(&argError{Field: "query", Msg: "is required"}), nil
	}
	q := strings.TrimSpace(*query)
	f := filter{Query: q, Status: deref(status), Priority: deref(prio)}
	return h.many(ctx, f, fmt.Sprintf(" matching %q", q))
}

func (h *handlers) update(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	a, err := parseArgs(req)
	if err != nil {
		return argResult(err), nil
	}
	var id int64
	var p patch
	if err := firstErr(
		a.todoID(&id),
		a.str("title", true, &p.Title),
		a.str("description", false, &p.Description),
		a.status(&p.Status),
		a.priority(&p.Priority),
		a.strings("tags", &p.Tags),
		a.date("due_date", &p.DueDate),
	); err != nil {
		return argResult(err), nil
	}
	if p.empty() {
		return argResult(&argError{Field: "todo_id",
			Msg: "nothing to update: give at least one of title, description, status, priority, tags, due_date"}), nil
	}
	if p.Title != nil {
		t := strings.TrimSpace(*p.Title)
		p.Title = &t
	}
	got, err := h.store.Update(ctx, id, p)
	if errors.Is(err, errNotFound) {
		return notFound(id), nil
	}
	if err != nil {
		return nil, err
	}
	return mcp.NewToolResultStructured(oneResult{Todo: got}, "Updated todo "+describe(got)), nil
}

func (h *handlers) delete(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	a, err := parseArgs(req)
	if err != nil {
		return argResult(err), nil
	}
	var id int64
	if err := a.todoID(&id); err != nil {
		return argResult(err), nil
	}
	got, err := h.store.Delete(ctx, id)
	if errors.Is(err, errNotFound) {
		return notFound(id), nil
	}
	if err != nil {
		return nil, err
	}
	return mcp.NewToolResultStructured(oneResult{Todo: got}, "Deleted todo "+describe(got)), nil
}

// many lists what f selects and renders it; suffix qualifies the count in the text.
func (h *handlers) many(ctx context.Context, f filter, suffix string) (*mcp.CallToolResult, error) {
	todos, err := h.store.List(ctx, f)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	switch len(todos) {
	case 0:
		fmt.Fprintf(&b, "No todos found%s.", suffix)
	case 1:
		fmt.Fprintf(&b, "Found 1 todo%s:", suffix)
	default:
		fmt.Fprintf(&b, "Found %d todos%s:", len(todos), suffix)
	}
	for _, t := range todos {
		b.WriteString("\n- ")
		b.WriteString(describe(t))
	}
	return mcp.NewToolResultStructured(manyResult{Todos: todos, Count: len(todos)}, b.String()), nil
}

// describe renders t on one line: #1 "Buy milk" [active, priority 3, due 2026-03-01, tags: a, b].
func describe(t todo) string {
	parts := []string{t.Status, fmt.Sprintf("priority %d", t.Priority)}
	if t.DueDate != nil {
		parts = append(parts, "due "+*t.DueDate)
	}
	if len(t.Tags) > 0 {
		parts = append(parts, "tags: "+strings.Join(t.Tags, ", "))
	}
	s := fmt.Sprintf("#%d %q [%s]", t.ID, t.Title, strings.Join(parts, ", "))
	if t.Description != "" {
		s += " - " + t.Description
	}
	return s
}

// argResult turns a bad-argument error into an isError result.
func argResult(err error) *mcp.CallToolResult {
	return mcp.NewToolResultError("invalid argument " + err.Error())
}

// notFound is the isError result for an unknown todo id.
func notFound(id int64) *mcp.CallToolResult {
	return mcp.NewToolResultError(fmt.Sprintf("todo_id: no todo with id %d (use list_todos or search_todos to find ids)", id))
}

// deref returns *p, or the zero value for nil.
func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

// recoverMiddleware logs every call at Debug and turns a panic in a handler
// into an isError result, so a bug answers one call instead of ending the server.
func recoverMiddleware(logger *slog.Logger) mcpserver.ToolHandlerMiddleware {
	return func(next mcpserver.ToolHandlerFunc) mcpserver.ToolHandlerFunc {
		return func(ctx context.Context, req mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
			start := time.Now()
			defer func() {
				if r := recover(); r != nil {
					logger.ErrorContext(ctx, "tool panicked", logKeyTool, req.Params.Name, "panic", r)
					res, err = mcp.NewToolResultError(fmt.Sprintf("internal error in %s", req.Params.Name)), nil
				}
				logger.DebugContext(ctx, "tool call", logKeyTool, req.Params.Name,
					"duration", time.Since(start), "is_error", res != nil && res.IsError, logKeyErr, err)
			}()
			return next(ctx, req)
		}
	}
}
