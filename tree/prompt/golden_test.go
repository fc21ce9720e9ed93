package prompt

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/elysia-go/elysia/internal/testenv"
	"github.com/elysia-go/elysia/tools"
)

// goldenEnv is an environment of three tools and five lists, with entries
// from a few bytes to several KiB, some of several objects, the way runs
// build them.
func goldenEnv() map[string]map[string][]tools.EnvEntry {
	var env tools.Environment
	lists := [][2]string{{"mcp_todo", "list"}, {"mcp_todo", "create_todo"}, {"mcp_big", "dump"}, {"mcp_web", "page"}, {"mcp_web", "links"}}
	for i := range 60 {
		l := lists[(i*7)%len(lists)]
		size := (i * 97) % 300
		if i%11 == 0 {
			size = 1500 + i*3
		}
		objs := []map[string]any{{"text": strings.Repeat(string(rune('a'+i%26)), size), "n": i}}
		if i%4 == 0 {
			objs = append(objs, map[string]any{"title": fmt.Sprint("second ", i), "done": i%8 == 0})
		}
		env.Add(l[0], l[1], objs, map[string]any{"step": i})
	}
	return env.Snapshot()
}

// TestWriteEnvironmentGolden pins the environment a decision prompt shows
// under various limits, byte for byte, so that changes to how it is
// fitted are seen.
func TestWriteEnvironmentGolden(t *testing.T) {
	env := goldenEnv()
	recent := []ResultKey{{"mcp_web", "page"}, {"mcp_todo", "list"}, {"mcp_web", "page"}, {"mcp_big", "dump"}, {"nope", "x"}}
	var out bytes.Buffer
	for _, tc := range []struct {
		name   string
		recent []ResultKey
		lim    envLimits
	}{
		{"no limit", recent, envLimits{total: -1, old: -1}},
		{"12 KiB", recent, envLimits{total: 12 << 10, old: -1}},
		{"4 KiB, old 512", recent, envLimits{total: 4 << 10, old: 512}},
		{"2 KiB, no query results", nil, envLimits{total: 2 << 10, old: -1}},
		{"1 KiB, old over total", recent, envLimits{total: 1 << 10, old: 2 << 10}},
		{"400 bytes", recent, envLimits{total: 400, old: 200}},
		{"200 bytes", recent, envLimits{total: 200, old: -1}},
	} {
		cache := &FormCache{}
		// Twice with one cache, as two decisions of a query, then
		// without: all three write the same.
		var first []byte
		for i, c := range []*FormCache{cache, cache, nil} {
			var b bytes.Buffer
			st, err := writeEnvironment(&b, env, tc.recent, tc.lim, c)
			if err != nil {
				t.Fatal(err)
			}
			if i > 0 {
				if !bytes.Equal(b.Bytes(), first) {
					t.Errorf("%s: decision %d wrote another environment", tc.name, i+1)
				}
				continue
			}
			first = bytes.Clone(b.Bytes())
			fmt.Fprintf(&out, "== %s: %d bytes, %d short, %d left out\n%s\n", tc.name, b.Len(), st.short, st.omitted, b.Bytes())
		}
	}
	for _, describe := range []bool{false, true} {
		dc := &Context{
			UserPrompt: "what is <left> & \"to do\"?", ConversationSummary: "2 earlier messages",
			ConversationHistory: []Message{{"user", "hi"}, {"assistant", "hello"}},
			NodeID:              "base", Instruction: "Choose a tool.",
			AvailableOptions: []Option{{Name: "mcp_todo", Description: "Todos", Inputs: Inputs{
				{Name: "action", Type: "string", Description: "what to do", Enum: []string{"list", "create"}, Required: true},
				{Name: "limit", Type: "integer", Description: "how many", Default: 10}}},
				{Name: "text_response", Description: "Answer", End: true}},
			UnavailableOptions: []Unavailable{{"mcp_web", "no page loaded"}},
			Environment:        env, Recent: recent, EnvLimit: DefaultMaxEnvironment, Budget: 8 << 10,
			TasksCompleted: []Task{{Tool: "mcp_todo", Inputs: map[string]any{"action": "list"}, Result: "3 todos"}},
			PreviousErrors: []PreviousError{{Tool: "mcp_web", ErrorMessage: "timeout", Feedback: "try again"}},
			TreeCount:      "1/5", Describe: describe,
		}
		msgs, st, err := Messages("Be brief.", dc)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&out, "== messages (describe %v): %+v\n", describe, st)
		for _, m := range msgs {
			fmt.Fprintf(&out, "%s: %s\n", m.Role, m.Parts[0].(llms.TextContent).Text)
		}
		fmt.Fprintf(&out, "functions: %d\n", len(Functions(dc.AvailableOptions)))
	}
	testenv.Golden(t, filepath.Join("testdata", "environment.golden"), out.Bytes())
}
