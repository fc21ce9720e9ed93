package tools

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// TestAppendJSONString: strings are written as encoding/json writes them,
// HTML escaped or not, including each byte value and special character
// at every offset of the eight-byte words AppendJSONString reads.
func TestAppendJSONString(t *testing.T) {
	cases := []string{"", "plain", "\"\\/", "\n\r\t\b\f\x00\x1f\x7f", "<a href='x'>&amp;</a>", "caf\u00e9 \U0001F600",
		"\u2028\u2029", "bad \xff\xfe utf-8 \xe2\x82", "\xed\xa0\x80 surrogate", strings.Repeat("<&>", 20)}
	const filler = "abcdefghijklmnopq"
	for off := range len(filler) {
		for c := range 256 {
			cases = append(cases, filler[:off]+string([]byte{byte(c)})+filler[off:])
		}
		for _, r := range []string{"\u00e9", "\u2028", "\U0001F600", "\xe2\x82"} {
			cases = append(cases, filler[:off]+r+filler[off:])
		}
	}
	for _, s := range cases {
		checkAppendJSONString(t, s)
	}
}

// checkAppendJSONString checks s both ways (HTML escaped or not) into a
// slice without room for the worst case and one with it (the two paths),
// and through WriteJSONString.
func checkAppendJSONString(t *testing.T, s string) {
	t.Helper()
	for _, html := range []bool{true, false} {
		want := encodedString(t, s, html)
		roomy := append(make([]byte, 0, 2*len(s)+3), 'x')
		for _, dst := range [][]byte{[]byte("x"), roomy} {
			if got := AppendJSONString(dst, s, html); string(got) != "x"+want {
				t.Errorf("AppendJSONString(%q, %v) with room %d = %s, want %s", s, html, cap(dst)-1, got[1:], want)
			}
		}
	}
	var b bytes.Buffer
	WriteJSONString(&b, s)
	if want := encodedString(t, s, false); b.String() != want {
		t.Errorf("WriteJSONString(%q) = %s, want %s", s, b.String(), want)
	}
}

// TestAppendJSONStringRoom: a string that needs no escaping takes only
// its own room: written into a slice or buffer with that much to spare,
// it allocates nothing.
func TestAppendJSONStringRoom(t *testing.T) {
	s := strings.Repeat("plain text, nothing to escape. ", 200)
	dst := make([]byte, 0, len(s)+2)
	if n := testing.AllocsPerRun(20, func() { _ = AppendJSONString(dst, s, true) }); n != 0 {
		t.Errorf("AppendJSONString of a plain string into its exact room: %v allocations, want 0", n)
	}
	var b bytes.Buffer
	b.Grow(len(s) + 2)
	if n := testing.AllocsPerRun(20, func() { b.Reset(); WriteJSONString(&b, s) }); n != 0 {
		t.Errorf("WriteJSONString of a plain string into a buffer with room: %v allocations, want 0", n)
	}
}

func FuzzAppendJSONString(f *testing.F) {
	f.Add("a\"b\\c\n<>&\u2028\xff")
	f.Fuzz(func(t *testing.T, s string) {
		checkAppendJSONString(t, s)
	})
}

// encodedString is s as encoding/json writes it, HTML escaped or not.
func encodedString(tb testing.TB, s string, html bool) string {
	tb.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(html)
	if err := enc.Encode(s); err != nil {
		tb.Fatal(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// BenchmarkAppendJSONString writes the texts of a chat request as JSON
// strings: a decision context (JSON, so a quote to escape every ten bytes
// or so), one whose environment holds JSON text (a quote every four bytes,
// each written as three), and the prose of a system message (almost
// nothing to escape).
func BenchmarkAppendJSONString(b *testing.B) {
	nested, _ := json.Marshal(map[string]any{"user_prompt": "add todo 1-2", "environment": map[string]any{"mcp_todo": map[string]any{"list": strings.Repeat(`{"name": "create_todo", "description": "Create a todo <item> & more", "inputs": {"title": "string"}}, `, 40)}}})
	for _, bc := range []struct{ name, s string }{
		{"context", benchDecisionContext(b)},
		{"nested", string(nested)},
		{"prose", strings.Repeat("Choose exactly one of the available options by calling its function. Fill its inputs from the user's prompt and the environment.\n", 60)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.s)))
			buf := make([]byte, 0, 2*len(bc.s)+2)
			for b.Loop() {
				buf = AppendJSONString(buf[:0], bc.s, true)
			}
		})
	}
}

// benchDecisionContext is a decision context of about 9 KB as package
// tree/prompt writes it (JSON, not HTML-escaped), its environment a list
// of todos.
func benchDecisionContext(b *testing.B) string {
	b.Helper()
	todos := make([]map[string]any, 40)
	for i := range todos {
		todos[i] = map[string]any{"id": i + 1, "title": "Buy milk and bread, item " + strconv.Itoa(i), "done": i%3 == 0, "priority": i % 5,
			"tags": []string{"home", "shop"}, "notes": "Semi-skimmed milk from the corner shop, and a loaf of bread if they still have the sourdough one."}
	}
	dc := map[string]any{
		"user_prompt":          `create a todo titled "Buy milk" with priority=2`,
		"conversation_summary": "The user keeps a todo list and asked to add, list and complete items <= 5.",
		"conversation_history": []map[string]string{{"role": "user", "content": "list my todos please"}, {"role": "assistant", "content": "You have 40 todos; 14 are done."}},
		"node":                 map[string]string{"id": "base", "instruction": "Choose a base-level task based on the user's prompt and the environment."},
		"available_options":    []map[string]any{{"name": "text_response", "end": true}, {"name": "mcp_todo", "end": false}},
		"environment":          map[string]any{"mcp_todo": map[string]any{"list": []map[string]any{{"objects": todos, "metadata": map[string]any{"server": "todo", "action": "list"}}}}},
		"tasks_completed":      []map[string]any{{"tool": "mcp_todo", "inputs": map[string]any{"action": "list"}, "result": "listed 40 todos", "error": false}},
		"tree_count":           "2/5",
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(dc); err != nil {
		b.Fatal(err)
	}
	return buf.String()
}
