package tree

import (
	"reflect"
	"strings"
	"testing"

	"github.com/elysia-go/elysia/tools"
)

// todoQuery is the script of one query on a todo gateway: list, execute
// create_todo, answer.
func todoQuery(title string) []step {
	return []step{
		{call: "mcp_todo", args: `{"action":"list"}`},
		{call: "mcp_todo", args: `{"action":"execute","tool_name":"create_todo","tool_inputs":{"title":"` + title + `"}}`},
		{call: "text_response", args: `{"text":"Created ` + title + `."}`},
	}
}

// A conversation keeps the prompt forms of its earlier results across
// queries, and its prompts are those of a copy that kept none.
func TestEarlierFormsKeptAcrossQueries(t *testing.T) {
	ctx := t.Context()
	store := newMemStore()
	opts := &Options{Store: store, MaxPromptBytes: 64 << 10}
	m := NewManager(opts)
	m.SetTools([]Placement{{Tool: newTodoGateway()}})
	c, err := m.Conversation(ctx, "alice", "c1")
	if err != nil {
		t.Fatal(err)
	}
	for _, title := range []string{"milk", "bread", "eggs"} {
		if err := c.Run(ctx, script(todoQuery(title)...), "create a todo "+title, "", nil); err != nil {
			t.Fatal(err)
		}
	}
	if reflect.ValueOf(c.forms).IsZero() {
		t.Fatal("no prompt forms of earlier results kept after three queries")
	}

	// A fresh copy of the conversation, loaded from the Store.
	m2 := NewManager(opts)
	m2.SetTools([]Placement{{Tool: newTodoGateway()}})
	fresh, err := m2.Conversation(ctx, "alice", "c1")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.ValueOf(fresh.forms).IsZero() {
		t.Fatal("a conversation loaded from the Store has prompt forms")
	}
	kept, none := script(todoQuery("jam")...), script(todoQuery("jam")...)
	if err := c.Run(ctx, kept, "create a todo jam", "q4", nil); err != nil {
		t.Fatal(err)
	}
	if err := fresh.Run(ctx, none, "create a todo jam", "q4", nil); err != nil {
		t.Fatal(err)
	}
	if len(kept.prompts) != 3 || len(none.prompts) != 3 {
		t.Fatalf("%d and %d decisions, want 3", len(kept.prompts), len(none.prompts))
	}
	for i := range kept.prompts {
		if kept.prompts[i] != none.prompts[i] {
			t.Errorf("decision %d: the prompt with kept forms differs from a fresh copy's:\n%s\nfresh:\n%s", i+1, kept.prompts[i], none.prompts[i])
		}
	}
	if !strings.Contains(kept.prompts[0], "of an earlier query") {
		t.Errorf("the prompt shows no earlier result as a digest:\n%s", kept.prompts[0])
	}
}

// Restoring a conversation drops the prompt forms kept of its earlier
// results: the next query shows the restored results.
func TestRestoreDropsEarlierForms(t *testing.T) {
	ctx := t.Context()
	m := NewManager(&Options{MaxPromptBytes: 64 << 10})
	m.SetTools([]Placement{{Tool: newTodoGateway()}})
	c, err := m.Conversation(ctx, "alice", "c1")
	if err != nil {
		t.Fatal(err)
	}
	for _, title := range []string{"milk", "bread"} {
		if err := c.Run(ctx, script(todoQuery(title)...), "create a todo "+title, "", nil); err != nil {
			t.Fatal(err)
		}
	}
	if reflect.ValueOf(c.forms).IsZero() {
		t.Fatal("no prompt forms of earlier results kept after two queries")
	}

	// The state as another replica may have saved it: the same lists, of
	// the same lengths, holding other results.
	st := c.State()
	for name, list := range st.Environment["mcp_todo"] {
		for i := range list {
			list[i] = tools.EnvEntry{Objects: []map[string]any{{tools.RefIDKey: list[i].Objects[0][tools.RefIDKey], "restored_" + name: i}},
				Metadata: map[string]any{}}
		}
	}
	m.mu.Lock()
	c.restoreLocked(st)
	m.mu.Unlock()
	if !reflect.ValueOf(c.forms).IsZero() {
		t.Fatal("restoring the conversation kept its prompt forms")
	}

	model := script(todoQuery("eggs")...)
	if err := c.Run(ctx, model, "create a todo eggs", "", nil); err != nil {
		t.Fatal(err)
	}
	first := model.prompts[0]
	for _, s := range []string{"restored_list", "restored_create_todo"} {
		if !strings.Contains(first, s) {
			t.Errorf("the prompt does not show the restored results (%s):\n%s", s, first)
		}
	}
	if strings.Contains(first, "Create a new todo item") || strings.Contains(first, "keys: created_at") || strings.Contains(first, "keys: description") {
		t.Errorf("the prompt shows results the conversation no longer holds:\n%s", first)
	}
}
