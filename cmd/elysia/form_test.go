package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/elysia-go/elysia/tools"
)

// formQuestion is a form like server-everything's, with its field order.
func formQuestion() tools.ElicitationPayload {
	return tools.ElicitationPayload{Server: "everything", Mode: "form", Message: "Please provide inputs",
		FieldOrder: []string{"name", "check", "integer", "hero", "instruments"},
		RequestedSchema: map[string]any{"type": "object", "required": []any{"name"}, "properties": map[string]any{
			"name":    map[string]any{"type": "string", "title": "Name", "description": "Your full name"},
			"check":   map[string]any{"type": "boolean", "title": "Agree"},
			"integer": map[string]any{"type": "integer", "minimum": 1, "maximum": 100, "default": 42},
			"hero": map[string]any{"type": "string", "title": "Hero", "oneOf": []any{
				map[string]any{"const": "hero-1", "title": "Superman"},
				map[string]any{"const": "hero-2", "title": "Green Lantern"},
				map[string]any{"const": "hero-3", "title": "Wonder Woman"}}, "default": "hero-1"},
			"instruments": map[string]any{"type": "array", "title": "Instruments", "maxItems": 3,
				"items": map[string]any{"type": "string", "enum": []any{"Guitar", "Piano", "Violin"}}},
		}}}
}

func askForm(t *testing.T, q tools.ElicitationPayload, input string) (tools.Answer, string) {
	t.Helper()
	var out bytes.Buffer
	a := &terminalAsker{in: bufio.NewReader(strings.NewReader(input)), out: &out, interactive: true}
	ans, err := a.answer(t.Context(), q, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ans, out.String()
}

// TestFormAsksInTheSchemasOrder: fields come in the server's order, the
// required one marked, choices listed and numbered, !decline mentioned.
func TestFormAsksInTheSchemasOrder(t *testing.T) {
	ans, out := askForm(t, formQuestion(), "Ada\ny\n7\n3\n1, piano\n")
	if ans.Action != tools.ElicitAccept {
		t.Fatalf("answer %+v, want accept\n%s", ans, out)
	}
	want := map[string]any{"name": "Ada", "check": true, "integer": int64(7), "hero": "hero-3", "instruments": []any{"Guitar", "Piano"}}
	if diff := cmp.Diff(want, ans.Content); diff != "" {
		t.Errorf("content (-want +got):\n%s", diff)
	}
	last := -1
	for _, label := range []string{"Name*", "Agree (yes/no)", "integer (whole number 1 to 100) [42]", "Hero (choose one", "Instruments (choose one or more"} {
		i := strings.Index(out, label)
		if i < 0 || i < last {
			t.Fatalf("%q is not asked after the field before it:\n%s", label, out)
		}
		last = i
	}
	for _, want := range []string{"!decline", "* = required", "1) Superman (hero-1)", "3) Wonder Woman (hero-3)", "[Superman]", "2) Piano", "Your full name"} {
		if !strings.Contains(out, want) {
			t.Errorf("the form lacks %q:\n%s", want, out)
		}
	}
}

// TestFormChecksEachFieldAtOnce: a bad answer asks that field again
// before the next one; a required field cannot be skipped; !decline
// declines; without the kept order, the required fields come first.
func TestFormChecksEachFieldAtOnce(t *testing.T) {
	ans, out := askForm(t, formQuestion(), "\nAda\nmaybe\nn\n500\n7\n9\nGreen lantern\n\n")
	if ans.Action != tools.ElicitAccept || ans.Content["integer"] != int64(7) || ans.Content["hero"] != "hero-2" || ans.Content["check"] != false {
		t.Fatalf("answer %+v\n%s", ans, out)
	}
	for _, w := range [][2]string{{"name is required", "Agree"}, {`"maybe" is not yes or no`, "integer"}, {"must be <= 100", "Hero"}, {`"9" is not one of the choices`, "Instruments"}} {
		i, j := strings.Index(out, w[0]), strings.Index(out, w[1])
		if i < 0 || j < 0 || i > j {
			t.Errorf("%q is not reported before %q is asked:\n%s", w[0], w[1], out)
		}
	}
	if ans, _ := askForm(t, formQuestion(), "Ada\n!decline\n"); ans.Action != tools.ElicitDecline {
		t.Errorf("!decline: %+v", ans)
	}
	if ans, out := askForm(t, formQuestion(), "\n\n\n"); ans.Action != tools.ElicitDecline || ans.Reason == "" {
		t.Errorf("three empty answers to a required field: %+v\n%s", ans, out)
	}
	q := formQuestion()
	q.FieldOrder = nil
	_, out = askForm(t, q, "Ada\n\n\n\n\n")
	if i, j := strings.Index(out, "Name*"), strings.Index(out, "Agree"); i < 0 || j < i {
		t.Errorf("without the server's order the required field is not asked first:\n%s", out)
	}
}

// TestUnattendedQuestionSaysWhy: without a terminal, `elysia mcp call`
// prints the question and why it was declined, with the way to accept
// the defaults.
func TestUnattendedQuestionSaysWhy(t *testing.T) {
	dir := everythingConfig(t, "")
	code, out, errOut := runCLI(t, dir, nil, "mcp", "call", "everything", "trigger-elicitation-request")
	if code != 0 || !strings.Contains(errOut, "? everything asks: Please provide inputs") || !strings.Contains(errOut, "declined: no terminal to ask on (set ELYSIA_ELICITATION=accept-defaults") {
		t.Errorf("exit %d\n%s\n%s", code, out, errOut)
	}
}

// TestQuestionEndsWithTheContext: Ctrl-C (the ctx ending) while the user
// is asked ends the question at once; the line being read then goes to the
// next question.
func TestQuestionEndsWithTheContext(t *testing.T) {
	pr, pw := io.Pipe()
	defer func() { _ = pw.Close() }()
	var out bytes.Buffer
	a := &terminalAsker{in: bufio.NewReader(pr), out: &out, interactive: true}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := a.answer(ctx, formQuestion(), nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("answer with an ended ctx: %v, want context.Canceled", err)
	}
	go func() { _, _ = io.WriteString(pw, "Ada\n") }() // the pipe's writer
	if line, err := a.readLine(t.Context()); err != nil || line != "Ada" {
		t.Errorf("the next read = %q, %v; want the pending line", line, err)
	}
}
