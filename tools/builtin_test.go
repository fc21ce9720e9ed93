package tools

import (
	"strings"
	"sync"
	"testing"
)

type events struct {
	mu  sync.Mutex
	evs []Event
}

func (e *events) Emit(ev Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.evs = append(e.evs, ev)
}

func TestTextResponse(t *testing.T) {
	tool := TextResponse()
	if tool.Name() != "text_response" || !tool.EndsRun() {
		t.Fatalf("name %q ends %v", tool.Name(), tool.EndsRun())
	}
	var got events
	res, err := tool.Run(t.Context(), Call{Args: map[string]any{"text": "Hello."}}, &got)
	if err != nil || res.IsError {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	if len(got.evs) != 1 || got.evs[0].Type != EventText {
		t.Fatalf("events = %+v", got.evs)
	}
	if p := got.evs[0].Payload.(TextPayload); p.Objects[0]["text"] != "Hello." || p.Type != "response" {
		t.Errorf("payload = %+v", p)
	}
	res, err = tool.Run(t.Context(), Call{Args: map[string]any{}}, Discard)
	if err != nil || !res.IsError {
		t.Errorf("empty text: %+v, %v", res, err)
	}
}

func TestCitedSummarize(t *testing.T) {
	tool := CitedSummarize()
	var env Environment
	if ok, reason := tool.(Availability).Available(&env); ok || reason != "no results in the environment yet" {
		t.Errorf("empty env: available %v, %q", ok, reason)
	}
	env.Add("mcp_todo", "list", []map[string]any{{"name": "a"}, {"name": "b"}}, nil)
	if ok, _ := tool.(Availability).Available(&env); !ok {
		t.Error("not available with results")
	}
	tests := []struct {
		name      string
		text      string
		wantErr   string
		wantCited []string
	}{
		{"cites known", "A [mcp_todo_list_0_0] and B [mcp_todo_list_0_1], again [mcp_todo_list_0_0].", "", []string{"mcp_todo_list_0_0", "mcp_todo_list_0_1"}},
		{"no citation", "Nothing to cite [1].", "", []string{}},
		{"unknown", "C [mcp_todo_list_3_0].", "unknown _REF_IDs: mcp_todo_list_3_0", nil},
		{"empty", " ", "non-empty text", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got events
			res, err := tool.Run(t.Context(), Call{Args: map[string]any{"text": tc.text}, Env: &env}, &got)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantErr != "" {
				if !res.IsError || !strings.Contains(res.Error, tc.wantErr) || len(got.evs) != 0 {
					t.Errorf("got %+v, events %d; want error %q", res, len(got.evs), tc.wantErr)
				}
				if tc.name == "unknown" && !strings.Contains(res.Feedback, "mcp_todo_list_0_1") {
					t.Errorf("feedback %q does not list the known ids", res.Feedback)
				}
				return
			}
			if res.IsError || len(got.evs) != 1 {
				t.Fatalf("got %+v, %d events", res, len(got.evs))
			}
			obj := got.evs[0].Payload.(TextPayload).Objects[0]
			if obj["text"] != tc.text || strings.Join(obj["ref_ids"].([]string), ",") != strings.Join(tc.wantCited, ",") {
				t.Errorf("object = %v, want refs %v", obj, tc.wantCited)
			}
		})
	}
}
