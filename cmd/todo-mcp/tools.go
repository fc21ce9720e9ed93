package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// Property schemas shared by several tools. Dates carry both a pattern, which
// every JSON Schema validator enforces, and format "date", which tells models
// and form builders what is meant; the handlers also reject impossible dates
// such as 2026-02-30 that the pattern lets through.
const (
	todoIDProp   = `{"type": "integer", "minimum": 1, "description": "Id of the todo, as returned by create_todo, list_todos or search_todos."}`
	priorityProp = `{"type": "integer", "minimum": 1, "maximum": 5, "description": "Priority from 1 (highest) to 5 (lowest)."}`
	statusProp   = `{"type": "string", "enum": ["active", "completed"], "description": "Status: active (still to do) or completed (done)."}`
	tagsProp     = `{"type": "array", "items": {"type": "string"}, "description": "Tags (labels) such as work or shopping."}`
)

// dateProp returns the schema of a YYYY-MM-DD date property.
func dateProp(description string) string {
	return `{"type": "string", "format": "date", "pattern": "^\\d{4}-\\d{2}-\\d{2}$", "description": "` + description + `"}`
}

// Output schemas: one todo, or a list of them.
const (
	todoSchema = `{"type": "object", "properties": {
		"id": {"type": "integer"}, "title": {"type": "string"}, "description": {"type": "string"},
		"status": {"type": "string", "enum": ["active", "completed"]}, "priority": {"type": "integer"},
		"tags": {"type": "array", "items": {"type": "string"}}, "due_date": {"type": ["string", "null"]},
		"created_at": {"type": "string"}, "updated_at": {"type": "string"}},
		"required": ["id", "title", "description", "status", "priority", "tags", "due_date", "created_at", "updated_at"]}`
	oneTodoOutput  = `{"type": "object", "properties": {"todo": ` + todoSchema + `}, "required": ["todo"]}`
	manyTodoOutput = `{"type": "object", "properties": {"todos": {"type": "array", "items": ` + todoSchema + `}, "count": {"type": "integer"}}, "required": ["todos", "count"]}`
)

// todoTools returns the five todo tools, each with its handler bound to h.
func todoTools(h *handlers) []mcpserver.ServerTool {
	return []mcpserver.ServerTool{
		{
			Tool: mcp.NewTool("create_todo",
				mcp.WithDescription("Creates a new todo item with a title and optional description, priority (1-5, default 3), tags and due date (YYYY-MM-DD). The new todo is active. Returns the todo with its id."),
				inputSchema(objectSchema(`{
					"title": {"type": "string", "minLength": 1, "description": "Short title of the todo (not empty)."},
					"description": {"type": "string", "description": "Longer free-text description."},
					"priority": `+priorityProp+`,
					"tags": `+tagsProp+`,
					"due_date": `+dateProp("Due date, YYYY-MM-DD.")+`}`, "title")),
				mcp.WithRawOutputSchema(json.RawMessage(oneTodoOutput)),
				annotations("Create todo", false, false, false),
			),
			Handler: h.create,
		},
		{
			Tool: mcp.NewTool("list_todos",
				mcp.WithDescription("Lists todos, oldest first, optionally filtered by status, priority, tags (todos carrying every given tag) and due date range (inclusive; todos without a due date are left out when a date filter is given). With no filters it lists every todo."),
				inputSchema(objectSchema(`{
					"status": `+statusProp+`,
					"priority": `+priorityProp+`,
					"tags": `+tagsProp+`,
					"due_date_before": `+dateProp("Only todos due on or before this date, YYYY-MM-DD.")+`,
					"due_date_after": `+dateProp("Only todos due on or after this date, YYYY-MM-DD.")+`}`)),
				mcp.WithRawOutputSchema(json.RawMessage(manyTodoOutput)),
				annotations("List todos", true, false, true),
			),
			Handler: h.list,
		},
		{
			Tool: mcp.NewTool("update_todo",
				mcp.WithDescription("Updates an existing todo by id: give todo_id and at least one field to change (title, description, status, priority, tags, due_date). Set status to completed to mark it done, or active to reopen it. tags replaces the whole tag list. Returns the updated todo."),
				inputSchema(objectSchema(`{
					"todo_id": `+todoIDProp+`,
					"title": {"type": "string", "minLength": 1, "description": "New title (not empty)."},
					"description": {"type": "string", "description": "New description."},
					"status": `+statusProp+`,
					"priority": `+priorityProp+`,
					"tags": `+tagsProp+`,
					"due_date": `+dateProp("New due date, YYYY-MM-DD.")+`}`, "todo_id")),
				mcp.WithRawOutputSchema(json.RawMessage(oneTodoOutput)),
				annotations("Update todo", false, false, true),
			),
			Handler: h.update,
		},
		{
			Tool: mcp.NewTool("search_todos",
				mcp.WithDescription("Searches todos whose title or description contains a keyword or phrase (case-insensitive), optionally only those with a given status or priority."),
				inputSchema(objectSchema(`{
					"query": {"type": "string", "minLength": 1, "description": "Keyword or phrase to look for in titles and descriptions."},
					"status": `+statusProp+`,
					"priority": `+priorityProp+`}`, "query")),
				mcp.WithRawOutputSchema(json.RawMessage(manyTodoOutput)),
				annotations("Search todos", true, false, true),
			),
			Handler: h.search,
		},
		{
			Tool: mcp.NewTool("delete_todo",
				mcp.WithDescription("Deletes a todo by id, permanently. Returns the deleted todo."),
				inputSchema(objectSchema(`{"todo_id": `+todoIDProp+`}`, "todo_id")),
				mcp.WithRawOutputSchema(json.RawMessage(oneTodoOutput)),
				annotations("Delete todo", false, true, true),
			),
			Handler: h.delete,
		},
	}
}

// inputSchema sets the tool's input schema to raw JSON. mcp.NewTool fills in
// a structured schema, which mcp-go refuses to marshal beside a raw one.
func inputSchema(schema json.RawMessage) mcp.ToolOption {
	return func(t *mcp.Tool) {
		t.InputSchema = mcp.ToolInputSchema{}
		t.RawInputSchema = schema
	}
}

// closedArgs wraps next so that an argument the tool's input schema does not
// list is an isError result naming it, as additionalProperties false says.
func closedArgs(tool mcp.Tool, next mcpserver.ToolHandlerFunc) mcpserver.ToolHandlerFunc {
	var schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(tool.RawInputSchema, &schema); err != nil {
		panic(fmt.Sprintf("input schema of %s: %v", tool.Name, err)) // programmer error: the schemas are constants
	}
	allowed := slices.Sorted(maps.Keys(schema.Properties))
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		a, err := parseArgs(req)
		if err != nil {
			return argResult(err), nil
		}
		for _, name := range slices.Sorted(maps.Keys(a)) {
			if !slices.Contains(allowed, name) {
				return argResult(&argError{Field: name, Msg: fmt.Sprintf("unknown argument; %s takes %s", tool.Name, strings.Join(allowed, ", "))}), nil
			}
		}
		return next(ctx, req)
	}
}

// objectSchema wraps properties (a JSON object) into a closed object schema
// with the given required properties.
func objectSchema(properties string, required ...string) json.RawMessage {
	req := ""
	if len(required) > 0 {
		b, _ := json.Marshal(required)
		req = `, "required": ` + string(b)
	}
	return json.RawMessage(`{"type": "object", "properties": ` + properties + req + `, "additionalProperties": false}`)
}

// annotations sets every hint explicitly. None of the tools reach beyond the
// server's own database, so the open-world hint is false throughout; the
// gateway may retry read-only tools.
func annotations(title string, readOnly, destructive, idempotent bool) mcp.ToolOption {
	return mcp.WithToolAnnotation(mcp.ToolAnnotation{
		Title:           title,
		ReadOnlyHint:    mcp.ToBoolPtr(readOnly),
		DestructiveHint: mcp.ToBoolPtr(destructive),
		IdempotentHint:  mcp.ToBoolPtr(idempotent),
		OpenWorldHint:   mcp.ToBoolPtr(false),
	})
}

// serverOptions configures newMCPServer.
type serverOptions struct {
	// Logger receives one Debug line per tool call; nil discards.
	Logger *slog.Logger
	// FaultTools registers the fault tool (for resilience tests) when true.
	FaultTools bool
	// Exit ends the process for the fault tool's crash mode; nil means os.Exit.
	Exit func(code int)
}

// newMCPServer returns the todo MCP server backed by st. The handlers check
// their arguments themselves (mcp-go's schema validation reports failures as
// Go struct dumps such as &{Got:9/1 Want:5/1}, which a model cannot read), and
// closedArgs rejects unknown argument names; failures and panics come back as
// isError results.
func newMCPServer(st store, opts *serverOptions) *mcpserver.MCPServer {
	var o serverOptions
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	tools := todoTools(&handlers{store: st, logger: o.Logger})
	if o.FaultTools {
		tools = append(tools, mcpserver.ServerTool{Tool: faultTool(), Handler: faultHandler(o.Exit, o.Logger)},
			mcpserver.ServerTool{Tool: faultReadTool(), Handler: faultReadHandler(o.Logger)})
	}
	for i := range tools {
		tools[i].Handler = closedArgs(tools[i].Tool, tools[i].Handler)
	}
	s := mcpserver.NewMCPServer("todo-mcp", version,
		mcpserver.WithToolCapabilities(false),
		mcpserver.WithOutputSchemaValidation(),
		mcpserver.WithInstructions("A todo list. Create todos with create_todo, find them with list_todos or search_todos, change or complete them with update_todo (status completed), and remove them with delete_todo. Dates are YYYY-MM-DD."),
		mcpserver.WithToolHandlerMiddleware(recoverMiddleware(o.Logger)),
		mcpserver.WithToolFilter(inOrder(tools)),
	)
	s.AddTools(tools...)
	return s
}

// inOrder returns a tool filter that lists tools in the order of tools:
// the order a person reads them in (create, list, update, search, delete),
// which DESIGN.md's examples show. mcp-go sorts tools/list by name before
// it applies filters, so the filter is where that order can be restored.
func inOrder(tools []mcpserver.ServerTool) mcpserver.ToolFilterFunc {
	rank := make(map[string]int, len(tools))
	for i, t := range tools {
		rank[t.Tool.Name] = i
	}
	return func(_ context.Context, listed []mcp.Tool) []mcp.Tool {
		out := slices.Clone(listed)
		slices.SortStableFunc(out, func(a, b mcp.Tool) int {
			ra, oka := rank[a.Name]
			rb, okb := rank[b.Name]
			switch {
			case oka && okb:
				return cmp.Compare(ra, rb)
			case oka:
				return -1
			case okb:
				return 1
			}
			return strings.Compare(a.Name, b.Name)
		})
		return out
	}
}
