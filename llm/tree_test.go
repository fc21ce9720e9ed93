package llm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/elysia-go/elysia/llm"
	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/tree"
)

// listedGateway is a tools.Tool shaped like an MCP gateway: it lists the
// tools of a testdata file and answers every execute with its inputs. It
// records the calls it gets.
type listedGateway struct {
	name  string
	tools []map[string]any

	// mu guards calls.
	mu    sync.Mutex
	calls []map[string]any
}

var _ tools.Tool = (*listedGateway)(nil)

func newListedGateway(t *testing.T, name, file string) *listedGateway {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	g := &listedGateway{name: name}
	if err := json.Unmarshal(b, &g.tools); err != nil {
		t.Fatal(err)
	}
	return g
}

func (g *listedGateway) Name() string { return g.name }
func (g *listedGateway) Description() string {
	return "MCP server '" + strings.TrimPrefix(g.name, "mcp_") + "' (stdio) - provides access to multiple tools"
}
func (g *listedGateway) EndsRun() bool { return false }
func (g *listedGateway) Inputs() []tools.Input {
	return []tools.Input{
		{Name: "action", Type: "string", Description: "list or execute", Default: "list", Enum: []string{"list", "execute"}},
		{Name: "tool_name", Type: "string", Description: "the tool to execute"},
		{Name: "tool_inputs", Type: "object", Description: "the tool's inputs", Default: map[string]any{}},
	}
}

func (g *listedGateway) Run(_ context.Context, call tools.Call, _ tools.Emitter) (tools.Result, error) {
	g.mu.Lock()
	g.calls = append(g.calls, call.Args)
	g.mu.Unlock()
	md := map[string]any{"action": call.Args["action"]}
	if call.Args["action"] != "execute" {
		return tools.Result{Name: "list", Objects: g.tools, Metadata: md}, nil
	}
	name, _ := call.Args["tool_name"].(string)
	in, _ := json.Marshal(call.Args["tool_inputs"])
	return tools.Result{Name: name, Type: "text", Metadata: md,
		Objects: []map[string]any{{"text": "done with " + string(in)}}}, nil
}

func (g *listedGateway) recorded() []map[string]any {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]map[string]any(nil), g.calls...)
}

// TestOfflineInTree runs the real decision loop with the offline planner, so
// a change on either side of docs/DECISION_PROMPT.md shows here.
func TestOfflineInTree(t *testing.T) {
	tests := []struct {
		name, file, gateway, prompt string
		mode                        tree.InitMode
		wantExec                    map[string]any
	}{
		{"todo one branch", "todo_tools.json", "mcp_todo", `create a todo titled "Buy milk" with priority=2`, tree.OneBranch,
			map[string]any{"action": "execute", "tool_name": "create_todo", "tool_inputs": map[string]any{"title": "Buy milk", "priority": json.Number("2")}}},
		{"everything one branch", "everything_tools.json", "mcp_everything", `echo message="hi"`, tree.OneBranch,
			map[string]any{"action": "execute", "tool_name": "echo", "tool_inputs": map[string]any{"message": "hi"}}},
		{"everything multi branch", "everything_tools.json", "mcp_everything", `echo message="hi"`, tree.MultiBranch,
			map[string]any{"action": "execute", "tool_name": "echo", "tool_inputs": map[string]any{"message": "hi"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newListedGateway(t, tt.gateway, tt.file)
			m := tree.NewManager(&tree.Options{DefaultMode: tt.mode})
			m.SetTools([]tree.Placement{{Tool: g}})
			c, err := m.Conversation(t.Context(), "alice", "c1")
			if err != nil {
				t.Fatal(err)
			}
			var texts []string
			err = c.Run(t.Context(), llm.NewOffline(), tt.prompt, "q1", func(e tools.Envelope) {
				if e.Type != tools.EventText {
					return
				}
				var p tools.TextPayload
				if err := json.Unmarshal(e.Payload, &p); err != nil {
					t.Error(err)
				}
				for _, o := range p.Objects {
					s, _ := o["text"].(string)
					texts = append(texts, s)
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			calls := g.recorded()
			if len(calls) != 2 || calls[0]["action"] != "list" {
				t.Fatalf("gateway calls = %v, want list then execute", calls)
			}
			if diff := cmp.Diff(tt.wantExec, normalise(t, calls[1])); diff != "" {
				t.Errorf("execute mismatch (-want +got):\n%s", diff)
			}
			if len(texts) != 1 || !strings.HasPrefix(texts[0], llm.Prefix) || !strings.Contains(texts[0], "done with") {
				t.Errorf("answers = %q, want one from the planner quoting the result", texts)
			}
		})
	}
}

// normalise round-trips args through JSON with UseNumber, so the test does
// not depend on how the tree decodes numbers.
func normalise(t *testing.T, args map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	var out map[string]any
	if err := dec.Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestOfflineSecondQuery checks that a later query of a conversation reuses
// the listed tools when the prompt still shows them, lists again when the
// listing was folded out of the prompt's budget, and runs its own execute.
func TestOfflineSecondQuery(t *testing.T) {
	for _, tc := range []struct {
		name   string
		budget int
		want   []string // actions of the gateway calls
	}{
		{"listing shown", -1, []string{"list", "execute", "execute"}},
		{"listing folded", 0, []string{"list", "execute", "list", "execute"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newListedGateway(t, "mcp_everything", "everything_tools.json")
			m := tree.NewManager(&tree.Options{MaxPromptBytes: tc.budget})
			m.SetTools([]tree.Placement{{Tool: g}})
			c, err := m.Conversation(t.Context(), "alice", "c1")
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range []string{`echo message="hi"`, `echo message="bye"`} {
				if err := c.Run(t.Context(), llm.NewOffline(), q, "", nil); err != nil {
					t.Fatal(err)
				}
			}
			calls := g.recorded()
			var got []string
			for _, call := range calls {
				got = append(got, fmt.Sprint(call["action"]))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("gateway calls (-want +got):\n%s", diff)
			}
			want := map[string]any{"action": "execute", "tool_name": "echo", "tool_inputs": map[string]any{"message": "bye"}}
			if diff := cmp.Diff(want, normalise(t, calls[len(calls)-1])); diff != "" {
				t.Errorf("second execute mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
