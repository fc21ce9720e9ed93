package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// listedTools returns the tools as the client sees them, by name, with each
// input schema as raw JSON decoded into a map.
func listedTools(t *testing.T, opts *serverOptions) map[string]mcp.Tool {
	t.Helper()
	c := newTestClient(t, opts)
	res, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]mcp.Tool{}
	for _, tool := range res.Tools {
		out[tool.Name] = tool
	}
	return out
}

// TestListOrder: tools/list gives the tools in the order a person reads
// them (DESIGN.md's examples), not mcp-go's alphabetical order; the fault
// tool comes last.
func TestListOrder(t *testing.T) {
	for _, tt := range []struct {
		opts *serverOptions
		want string
	}{
		{nil, "create_todo list_todos update_todo search_todos delete_todo"},
		{&serverOptions{FaultTools: true}, "create_todo list_todos update_todo search_todos delete_todo fault fault_read"},
	} {
		res, err := newTestClient(t, tt.opts).ListTools(t.Context(), mcp.ListToolsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
		}
		if got := strings.Join(names, " "); got != tt.want {
			t.Errorf("tools/list order = %s, want %s", got, tt.want)
		}
	}
}

// schemaOf returns the listed input schema of tool as a generic map.
func schemaOf(t *testing.T, tool mcp.Tool) map[string]any {
	t.Helper()
	b, err := json.Marshal(tool)
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		InputSchema map[string]any `json:"inputSchema"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v.InputSchema
}

func TestListedSchemas(t *testing.T) {
	tools := listedTools(t, nil)
	if len(tools) != 5 {
		t.Fatalf("got %d tools, want 5 (the fault tool must be absent by default)", len(tools))
	}
	date := map[string]any{"type": "string", "format": "date", "pattern": `^\d{4}-\d{2}-\d{2}$`}
	priority := map[string]any{"type": "integer", "minimum": 1.0, "maximum": 5.0}
	status := map[string]any{"type": "string", "enum": []any{"active", "completed"}}
	tags := map[string]any{"type": "array", "items": map[string]any{"type": "string"}}
	id := map[string]any{"type": "integer", "minimum": 1.0}
	text := map[string]any{"type": "string"}
	for _, tc := range []struct {
		tool     string
		required []any
		props    map[string]map[string]any
		readOnly bool
		destroy  bool
	}{
		{"create_todo", []any{"title"}, map[string]map[string]any{"title": text, "description": text, "priority": priority, "tags": tags, "due_date": date}, false, false},
		{"list_todos", nil, map[string]map[string]any{"status": status, "priority": priority, "tags": tags, "due_date_before": date, "due_date_after": date}, true, false},
		{"update_todo", []any{"todo_id"}, map[string]map[string]any{"todo_id": id, "title": text, "description": text, "status": status, "priority": priority, "tags": tags, "due_date": date}, false, false},
		{"search_todos", []any{"query"}, map[string]map[string]any{"query": text, "status": status, "priority": priority}, true, false},
		{"delete_todo", []any{"todo_id"}, map[string]map[string]any{"todo_id": id}, false, true},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			tool, ok := tools[tc.tool]
			if !ok {
				t.Fatalf("tool %s not listed", tc.tool)
			}
			if len(tool.Description) < 40 {
				t.Errorf("description too thin: %q", tool.Description)
			}
			s := schemaOf(t, tool)
			if s["type"] != "object" || s["additionalProperties"] != false {
				t.Errorf("schema is not a closed object: %v", s)
			}
			if got, _ := s["required"].([]any); len(got) != len(tc.required) || (len(got) > 0 && !jsonEqual(got, tc.required)) {
				t.Errorf("required = %v, want %v", got, tc.required)
			}
			props, _ := s["properties"].(map[string]any)
			if len(props) != len(tc.props) {
				t.Errorf("properties %v, want exactly %v", keys(props), keys(tc.props))
			}
			for name, want := range tc.props {
				got, _ := props[name].(map[string]any)
				if got["description"] == nil {
					t.Errorf("%s has no description", name)
				}
				for k, v := range want {
					if !jsonEqual(got[k], v) {
						t.Errorf("%s.%s = %v, want %v", name, k, got[k], v)
					}
				}
			}
			a := tool.Annotations
			if deref(a.ReadOnlyHint) != tc.readOnly || deref(a.DestructiveHint) != tc.destroy || a.OpenWorldHint == nil || *a.OpenWorldHint {
				t.Errorf("annotations %+v", a)
			}
			if tc.readOnly && !deref(a.IdempotentHint) {
				t.Errorf("read-only tool is not marked idempotent")
			}
			if tool.RawOutputSchema == nil && tool.OutputSchema.Type == "" {
				t.Errorf("no output schema")
			}
		})
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestFaultTool(t *testing.T) {
	var exitCode atomic.Int64
	exitCode.Store(-1)
	c := newTestClient(t, &serverOptions{FaultTools: true, Exit: func(code int) { exitCode.Store(int64(code)) }})

	t.Run("listed with a schema", func(t *testing.T) {
		s := schemaOf(t, listedTools(t, &serverOptions{FaultTools: true})["fault"])
		mode, _ := s["properties"].(map[string]any)["mode"].(map[string]any)
		if !jsonEqual(mode["enum"], []string{"crash", "hang", "big"}) {
			t.Errorf("mode schema %v", mode)
		}
	})
	t.Run("big default", func(t *testing.T) {
		// Directly, not through the client: 10 MiB of JSON is slow under -race.
		var req mcp.CallToolRequest
		req.Params.Arguments = map[string]any{"mode": "big"}
		res, err := faultHandler(nil, slog.New(slog.DiscardHandler))(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(text(res)); got != defaultFaultSize {
			t.Errorf("big returned %d bytes, want %d", got, defaultFaultSize)
		}
	})
	t.Run("big size", func(t *testing.T) {
		if got := text(call(t, c, "fault", map[string]any{"mode": "big", "size": 5})); got != "xxxxx" {
			t.Errorf("big size 5 returned %q", got)
		}
	})
	t.Run("crash exits with 3", func(t *testing.T) {
		call(t, c, "fault", map[string]any{"mode": "crash"})
		if got := exitCode.Load(); got != faultExitCode {
			t.Errorf("exit code %d, want %d", got, faultExitCode)
		}
	})
	t.Run("hang until cancelled", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		var req mcp.CallToolRequest
		req.Params.Name = "fault"
		req.Params.Arguments = map[string]any{"mode": "hang"}
		start := time.Now()
		_, err := c.CallTool(ctx, req)
		if err == nil {
			t.Fatal("hang returned without an error")
		}
		if !errors.Is(err, context.DeadlineExceeded) && !strings.Contains(err.Error(), "deadline") {
			t.Errorf("hang error %v, want the deadline", err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("hang took %v to give up", d)
		}
	})
	t.Run("bad mode", func(t *testing.T) {
		res := call(t, c, "fault", map[string]any{"mode": "explode"})
		if !res.IsError || !strings.Contains(text(res), "mode:") {
			t.Errorf("bad mode: %v %q", res.IsError, text(res))
		}
	})
}

func TestParseConfig(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	for _, tc := range []struct {
		name    string
		argv    []string
		env     func(string) string
		check   func(config) bool
		wantErr bool
	}{
		{"defaults", nil, env(), func(c config) bool {
			return c.HTTPAddr == "" && c.SQLitePath == "./data/todos.db" && c.PostgresURL == ""
		}, false},
		{"http", []string{"--http", "127.0.0.1:0"}, env(), func(c config) bool { return c.HTTPAddr == "127.0.0.1:0" }, false},
		{"sse single dash", []string{"-sse", "127.0.0.1:0"}, env(), func(c config) bool { return c.SSEAddr == "127.0.0.1:0" }, false},
		{"env", nil, env("TODO_DB", "/x/t.db", "TODO_DATABASE_URL", "postgres://h/db"), func(c config) bool {
			return c.SQLitePath == "/x/t.db" && c.PostgresURL == "postgres://h/db"
		}, false},
		{"faults", []string{"--fault-start-delay", "2s", "--fault-garbage", "--fault-tools"}, env(), func(c config) bool {
			return c.StartDelay == 2*time.Second && c.Garbage && c.FaultTools
		}, false},
		{"both transports", []string{"--http", "a:1", "--sse", "a:2"}, env(), nil, true},
		{"unknown flag", []string{"--nope"}, env(), nil, true},
		{"stray argument", []string{"serve"}, env(), nil, true},
		{"bad log level", nil, env("TODO_LOG_LEVEL", "loud"), nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := parseConfig(tc.argv, tc.env)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if tc.check != nil && !tc.check(cfg) {
				t.Errorf("config %+v", cfg)
			}
		})
	}
}
