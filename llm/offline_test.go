package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tmc/langchaingo/llms"
)

// fakeServer is one gateway of a simulated tree: the tools it lists and how
// it answers an execute.
type fakeServer struct {
	gateway string
	tools   []map[string]any
	execute func(tool string, args map[string]any) (objects []map[string]any, errMsg, feedback string)
}

func loadTools(tb testing.TB, file string) []map[string]any {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		tb.Fatal(err)
	}
	var out []map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		tb.Fatalf("%s: %v", file, err)
	}
	return out
}

// gatewayTool is the function a tree offers for a gateway.
func gatewayTool(name string) llms.Tool {
	return llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
		Name:        name,
		Description: "MCP server '" + strings.TrimPrefix(name, "mcp_") + "' (stdio) - provides access to multiple tools",
		Parameters: map[string]any{"type": "object", "required": []string{}, "properties": map[string]any{
			"action":      map[string]any{"type": "string", "enum": []string{"list", "execute"}, "default": "list"},
			"tool_name":   map[string]any{"type": "string"},
			"tool_inputs": map[string]any{"type": "object", "default": map[string]any{}},
		}}}}
}

var answerFn = llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
	Name: "text_response", Description: "Answer the user in text and end the run.",
	Parameters: map[string]any{"type": "object", "required": []string{"text"},
		"properties": map[string]any{"text": map[string]any{"type": "string"}}}}}

// call is one tool call of a simulated run.
type call struct {
	Name string
	Args map[string]any
}

// simulate drives the planner as the tree would, for at most limit steps,
// then forces an answer. It returns the calls made.
func simulate(t *testing.T, prompt string, servers []fakeServer, limit int) []call {
	t.Helper()
	env := map[string]map[string][]map[string]any{}
	tasks, errs := []map[string]any{}, []map[string]any{}
	var calls []call
	for step := 0; step <= limit; step++ {
		fns := []llms.Tool{answerFn}
		if step < limit {
			for _, s := range servers {
				fns = append(fns, gatewayTool(s.gateway))
			}
		}
		dc := map[string]any{"user_prompt": prompt, "conversation_history": []any{},
			"node":        map[string]any{"id": "base", "instruction": "Choose a base-level task."},
			"environment": env, "tasks_completed": tasks, "previous_errors": errs,
			"tree_count": fmt.Sprintf("%d/%d", step+1, limit)}
		human, err := json.Marshal(dc)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := NewOffline().GenerateContent(t.Context(), []llms.MessageContent{
			llms.TextParts(llms.ChatMessageTypeSystem, "Choose exactly one of the available options."),
			llms.TextParts(llms.ChatMessageTypeHuman, string(human)),
		}, llms.WithTools(fns))
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		c := oneCall(t, resp)
		calls = append(calls, c)
		if c.Name == "text_response" {
			return calls
		}
		var srv *fakeServer
		for i := range servers {
			if servers[i].gateway == c.Name {
				srv = &servers[i]
			}
		}
		if srv == nil {
			t.Fatalf("step %d: call of unknown option %q", step, c.Name)
		}
		if c.Args["action"] == "list" {
			env[srv.gateway] = map[string][]map[string]any{"list": {{"objects": srv.tools, "metadata": map[string]any{"action": "list"}}}}
			tasks = append(tasks, map[string]any{"tool": srv.gateway, "inputs": c.Args, "result": "listed", "error": false})
			continue
		}
		tool, _ := c.Args["tool_name"].(string)
		inputs, _ := c.Args["tool_inputs"].(map[string]any)
		objs, msg, feedback := srv.execute(tool, inputs)
		if msg != "" {
			errs = append(errs, map[string]any{"tool": srv.gateway, "error_message": msg, "feedback": feedback})
			tasks = append(tasks, map[string]any{"tool": srv.gateway, "inputs": c.Args, "result": msg, "error": true})
			continue
		}
		env[srv.gateway][tool] = []map[string]any{{"objects": objs, "metadata": map[string]any{}}}
		// As the gateway does, the task's result is the text the tool gave
		// the model; here the objects as JSON.
		text, _ := json.Marshal(objs)
		tasks = append(tasks, map[string]any{"tool": srv.gateway, "inputs": c.Args, "result": string(text), "error": false})
	}
	t.Fatalf("no answer after %d steps: %v", limit, calls)
	return nil
}

// oneCall checks that resp holds one choice with one tool call and decodes it.
func oneCall(tb testing.TB, resp *llms.ContentResponse) call {
	tb.Helper()
	if len(resp.Choices) != 1 || len(resp.Choices[0].ToolCalls) != 1 {
		tb.Fatalf("want one choice with one tool call, got %+v", resp.Choices)
	}
	fc := resp.Choices[0].ToolCalls[0].FunctionCall
	var args map[string]any
	if err := json.Unmarshal([]byte(fc.Arguments), &args); err != nil {
		tb.Fatalf("arguments %q: %v", fc.Arguments, err)
	}
	if !strings.HasPrefix(resp.Choices[0].Content, Prefix) {
		tb.Errorf("content %q does not start with %q", resp.Choices[0].Content, Prefix)
	}
	return call{fc.Name, args}
}

func todoServer(tb testing.TB) fakeServer {
	tb.Helper()
	return fakeServer{gateway: "mcp_todo", tools: loadTools(tb, "todo_tools.json"),
		execute: func(tool string, args map[string]any) ([]map[string]any, string, string) {
			if p, ok := args["priority"].(float64); ok && p > 5 {
				return nil, "invalid tool_inputs for " + tool, "/priority: must be <= 5"
			}
			if _, ok := args["title"]; tool == "create_todo" && !ok {
				return nil, "invalid tool_inputs for " + tool, "missing property 'title'"
			}
			return []map[string]any{{"id": 1, "title": args["title"], "status": "active", "_REF_ID": "x"}}, "", ""
		}}
}

func everythingServer(tb testing.TB) fakeServer {
	tb.Helper()
	return fakeServer{gateway: "mcp_everything", tools: loadTools(tb, "everything_tools.json"),
		execute: func(tool string, args map[string]any) ([]map[string]any, string, string) {
			return []map[string]any{{"type": "text", "text": fmt.Sprintf("Echo: %v", args["message"])}}, "", ""
		}}
}

func listCall(gateway string) call {
	return call{gateway, map[string]any{"action": "list"}}
}

func execCall(gateway, tool string, inputs map[string]any) call {
	return call{gateway, map[string]any{"action": "execute", "tool_name": tool, "tool_inputs": inputs}}
}

func TestOfflineRuns(t *testing.T) {
	todo, everything := todoServer(t), everythingServer(t)
	tests := []struct {
		name       string
		prompt     string
		servers    []fakeServer
		want       []call // without the final text_response
		answerHas  string
		answerNone string
	}{
		{"todo create", `create a todo titled "Buy milk" with priority=2`, []fakeServer{todo},
			[]call{listCall("mcp_todo"), execCall("mcp_todo", "create_todo", map[string]any{"title": "Buy milk", "priority": 2.0})},
			"Buy milk", "refused"},
		{"everything echo", `echo message="hi"`, []fakeServer{everything},
			[]call{listCall("mcp_everything"), execCall("mcp_everything", "echo", map[string]any{"message": "hi"})},
			"Echo: hi", "_REF_ID"},
		{"second server found after listing the first", `echo message="hi"`, []fakeServer{todo, everything},
			[]call{listCall("mcp_todo"), listCall("mcp_everything"), execCall("mcp_everything", "echo", map[string]any{"message": "hi"})},
			"Echo: hi", ""},
		{"gateway chosen by name", `list my todos`, []fakeServer{everything, todo},
			[]call{listCall("mcp_todo"), execCall("mcp_todo", "list_todos", map[string]any{})},
			"Ran list_todos", ""},
		{"invalid optional dropped on retry", `create a todo titled "Buy milk" with priority=9`, []fakeServer{todo},
			[]call{listCall("mcp_todo"),
				execCall("mcp_todo", "create_todo", map[string]any{"title": "Buy milk", "priority": 9.0}),
				execCall("mcp_todo", "create_todo", map[string]any{"title": "Buy milk"})},
			"The first attempt was refused: invalid tool_inputs for create_todo (/priority: must be <= 5); the inputs were adjusted", ""},
		{"nothing matches", `what is the weather in Paris`, []fakeServer{todo},
			[]call{listCall("mcp_todo")},
			"no tool matched your request; available: create_todo, list_todos", ""},
		{"sum of numbers", `get the sum of a=2 and b=3`, []fakeServer{everything},
			[]call{listCall("mcp_everything"), execCall("mcp_everything", "get-sum", map[string]any{"a": 2.0, "b": 3.0})},
			"Ran get-sum of everything", ""},
		{"tool without inputs", `show me the tiny image`, []fakeServer{everything},
			[]call{listCall("mcp_everything"), execCall("mcp_everything", "get-tiny-image", map[string]any{})},
			"Ran get-tiny-image", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := simulate(t, tt.prompt, tt.servers, 6)
			last := calls[len(calls)-1]
			if diff := cmp.Diff(tt.want, calls[:len(calls)-1]); diff != "" {
				t.Errorf("calls mismatch (-want +got):\n%s", diff)
			}
			text, _ := last.Args["text"].(string)
			if !strings.HasPrefix(text, Prefix) || !strings.Contains(text, tt.answerHas) {
				t.Errorf("answer %q: want prefix %q and %q", text, Prefix, tt.answerHas)
			}
			if tt.answerNone != "" && strings.Contains(text, tt.answerNone) {
				t.Errorf("answer %q holds %q", text, tt.answerNone)
			}
		})
	}
}

func TestOfflineGivesUpAfterRepeatedErrors(t *testing.T) {
	srv := todoServer(t)
	srv.execute = func(string, map[string]any) ([]map[string]any, string, string) {
		return nil, "server said no", "database is locked"
	}
	calls := simulate(t, `create a todo titled "Buy milk"`, []fakeServer{srv}, 6)
	if got, want := len(calls), 3; got != want {
		t.Fatalf("got %d calls (%v), want %d: list, execute, answer", got, calls, want)
	}
	text := calls[2].Args["text"].(string)
	if !strings.Contains(text, "failed: server said no (database is locked)") {
		t.Errorf("answer %q does not report the error", text)
	}
}

func TestOfflineForcedAnswer(t *testing.T) {
	calls := simulate(t, `create a todo titled "Buy milk"`, []fakeServer{todoServer(t)}, 1)
	if diff := cmp.Diff([]call{listCall("mcp_todo")}, calls[:1]); diff != "" {
		t.Errorf("calls mismatch (-want +got):\n%s", diff)
	}
	if got := calls[1]; got.Name != "text_response" || !strings.HasPrefix(got.Args["text"].(string), Prefix) {
		t.Errorf("forced answer = %+v", got)
	}
}

func TestOfflineFixtures(t *testing.T) {
	tests := []struct {
		file string
		want call
	}{
		{"todo_listed.json", execCall("mcp_todo", "create_todo", map[string]any{"title": "Buy milk", "priority": 2.0, "tags": []any{"shopping", "home"}})},
		{"todo_retry.json", execCall("mcp_todo", "create_todo", map[string]any{"title": "Buy milk"})},
		{"everything_fresh.json", listCall("mcp_everything")},
		{"branch_root.json", call{"mcp", map[string]any{}}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			var fixture struct {
				Tools   []llms.Tool     `json:"tools"`
				Context json.RawMessage `json:"context"`
			}
			if err := json.Unmarshal(b, &fixture); err != nil {
				t.Fatal(err)
			}
			resp, err := NewOffline().GenerateContent(t.Context(),
				[]llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, string(fixture.Context))},
				llms.WithTools(fixture.Tools))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, oneCall(t, resp)); diff != "" {
				t.Errorf("call mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOfflineWithoutFunctions(t *testing.T) {
	o := NewOffline()
	// Call is deprecated, but llms.Model still requires it and Offline
	// implements it, so it is tested.
	//lint:ignore SA1019 testing the deprecated method llms.Model requires
	got, err := o.Call(t.Context(), "hello there") //nolint:staticcheck // testing the deprecated method llms.Model requires
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got, Prefix) {
		t.Errorf("Call = %q, want prefix %q", got, Prefix)
	}
	resp, err := o.GenerateContent(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if c := resp.Choices[0]; len(c.ToolCalls) != 0 || !strings.HasPrefix(c.Content, Prefix) {
		t.Errorf("choice = %+v", c)
	}
}

func TestOfflineCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := NewOffline().GenerateContent(ctx, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

// TestNoServerSpecificStrings keeps the planner generic: no name of a test
// server's tools may appear in the package's code.
func TestNoServerSpecificStrings(t *testing.T) {
	banned := []string{"todo", "everything", "echo", "milk", "priority", "get-sum", "tiny"}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src := strings.ToLower(string(b))
		for _, w := range banned {
			if strings.Contains(src, w) {
				t.Errorf("%s holds %q", f, w)
			}
		}
	}
}

func FuzzOffline(f *testing.F) {
	f.Add(`create a todo titled "Buy milk" with priority=2`)
	f.Add(`echo message="hi" tags=[1,2 a: "b`)
	f.Add(`{"user_prompt": "x=1", "environment": {"mcp_x": {"list": [{"objects": [{"name": 3}]}]}}}`)
	f.Add(`{"user_prompt": 5, "tasks_completed": "no", "previous_errors": [{"tool": "mcp_x"}]}`)
	f.Add(`'"“`)
	tools := loadTools(f, "everything_tools.json")
	fns := llms.WithTools([]llms.Tool{answerFn, gatewayTool("mcp_x"), {Type: "function",
		Function: &llms.FunctionDefinition{Name: "branch", Parameters: "not a schema"}}})
	f.Fuzz(func(t *testing.T, text string) {
		listed, err := json.Marshal(map[string]any{"user_prompt": text,
			"environment":     map[string]any{"mcp_x": map[string]any{"list": []any{map[string]any{"objects": tools}}}},
			"previous_errors": []any{map[string]any{"tool": "mcp_x", "error_message": text, "feedback": text}}})
		if err != nil {
			t.Fatal(err)
		}
		for _, human := range []string{text, string(listed)} {
			resp, err := NewOffline().GenerateContent(t.Context(),
				[]llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, human)}, fns)
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Choices) != 1 || len(resp.Choices[0].ToolCalls) != 1 {
				t.Fatalf("want one tool call, got %+v", resp.Choices)
			}
		}
	})
}

// TestOfflineReadsANamedResource: a prompt naming a resource by its URI
// reads it on the gateway that offers resources, then answers.
func TestOfflineReadsANamedResource(t *testing.T) {
	gw := llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
		Name:        "mcp_docs",
		Description: "MCP server 'docs' (stdio) - provides access to multiple tools. Also offers resources and prompts (actions list_resources, read_resource, list_prompts, get_prompt)",
		Parameters: map[string]any{"type": "object", "properties": map[string]any{
			"action":      map[string]any{"type": "string", "enum": []string{"list", "execute", "list_resources", "read_resource", "list_prompts", "get_prompt"}},
			"tool_name":   map[string]any{"type": "string"},
			"tool_inputs": map[string]any{"type": "object"},
			"uri":         map[string]any{"type": "string"},
		}}}}
	decide := func(tasks []map[string]any) call {
		human, _ := json.Marshal(map[string]any{"user_prompt": "show me docs://guide/intro.md, please", "environment": map[string]any{},
			"tasks_completed": tasks, "previous_errors": []any{}, "tree_count": "1/5"})
		resp, err := NewOffline().GenerateContent(t.Context(), []llms.MessageContent{
			llms.TextParts(llms.ChatMessageTypeHuman, string(human))}, llms.WithTools([]llms.Tool{answerFn, gw}))
		if err != nil {
			t.Fatal(err)
		}
		return oneCall(t, resp)
	}
	first := decide([]map[string]any{})
	if want := (call{"mcp_docs", map[string]any{"action": "read_resource", "uri": "docs://guide/intro.md"}}); !cmp.Equal(first, want) {
		t.Fatalf("first decision = %+v, want %+v", first, want)
	}
	second := decide([]map[string]any{{"tool": "mcp_docs", "inputs": first.Args, "result": "# Intro", "error": false}})
	if second.Name != "text_response" {
		t.Errorf("after reading: %+v, want the answer", second)
	}
}
