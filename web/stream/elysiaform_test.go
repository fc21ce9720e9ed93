package stream

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/web/internal/webtest"
)

// TestElysiaFrontendFormCatalogue pins the message Elysia's frontend gets
// for a server's catalogue: a table of names and one-line descriptions, in
// that column order, with the metadata as it was and no schema or _REF_ID.
func TestElysiaFrontendFormCatalogue(t *testing.T) {
	long := strings.Repeat("word ", 40) // 200 characters
	tests := []struct {
		name, payload, want string
	}{
		{"tools, as DESIGN.md's appendix lists them",
			`{"type":"table","objects":[{"name":"create_todo","description":"...","inputs":{"type":"object"},"_REF_ID":"mcp_todo_list_0_0"}],"metadata":{"server":"todo","action":"list"}}`,
			`{"type":"table","objects":[{"name":"create_todo","description":"..."}],"metadata":{"server":"todo","action":"list"}}`},
		{"tools with an output schema, a long description and some left out",
			`{"type":"table","objects":[` +
				`{"_REF_ID":"mcp_e_list_0_0","description":"Echoes back the input.\n\nArgs:\n  message: what to echo","inputs":{"type":"object","properties":{"message":{"type":"string"}}},"name":"echo","output_schema":{"type":"object"}},` +
				`{"_REF_ID":"mcp_e_list_0_1","description":"` + long + `","inputs":{},"name":"add"}],` +
				`"metadata":{"action":"list","circuit":{"state":"closed"},"note":"3 of 5 tools left out","omitted":3,"server":"everything","state":"connected"}}`,
			`{"type":"table","objects":[{"name":"echo","description":"Echoes back the input."},` +
				`{"name":"add","description":"` + strings.TrimSpace(strings.Repeat("word ", 24)) + `…"},` +
				`{"name":"…","description":"3 more not listed"}],` +
				`"metadata":{"action":"list","circuit":{"state":"closed"},"note":"3 of 5 tools left out","omitted":3,"server":"everything","state":"connected"}}`},
		{"resources: the URI stands in for a missing description",
			`{"type":"table","objects":[{"_REF_ID":"mcp_e_list_resources_0_0","mime_type":"text/plain","name":"Resource 1","uri":"test://static/resource/1"},` +
				`{"_REF_ID":"mcp_e_list_resources_0_1","description":"A\ttemplate","name":"Template","uri_template":"test://{id}"},` +
				`{"_REF_ID":"mcp_e_list_resources_0_2","name":"T2","uri_template":"test://t/{id}"}],"metadata":{"action":"list_resources","server":"everything"}}`,
			`{"type":"table","objects":[{"name":"Resource 1","description":"test://static/resource/1"},{"name":"Template","description":"A template"},{"name":"T2","description":"test://t/{id}"}],"metadata":{"action":"list_resources","server":"everything"}}`},
		{"prompts, and a saved log's note that objects were left out",
			`{"type":"table","objects":[{"_REF_ID":"mcp_e_list_prompts_0_0","arguments":[{"name":"style","required":false}],"description":"A prompt <with> arguments","name":"complex_prompt"},` +
				`{"_TRUNCATED":"4 of 5 objects left out: a saved conversation keeps 64 KiB of each result"}],"metadata":{"action":"list_prompts","server":"everything"}}`,
			`{"type":"table","objects":[{"name":"complex_prompt","description":"A prompt <with> arguments"},` +
				`{"name":"…","description":"4 of 5 objects left out: a saved conversation keeps 64 KiB of each result"}],"metadata":{"action":"list_prompts","server":"everything"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := tools.Envelope{Type: tools.EventResult, ID: "res-1", UserID: "alice", ConversationID: "c1", QueryID: "q1",
				Payload: json.RawMessage(tt.payload)}
			got := ElysiaFrontendForm(env)
			if string(got.Payload) != tt.want {
				t.Errorf("payload:\n%s\nwant:\n%s", got.Payload, tt.want)
			}
			if got.Type != env.Type || got.ID != env.ID || got.UserID != env.UserID || got.ConversationID != env.ConversationID || got.QueryID != env.QueryID {
				t.Errorf("envelope changed beyond its payload: %+v", got)
			}
			raw, err := tools.Marshal(env)
			if err != nil {
				t.Fatal(err)
			}
			wantRaw, err := tools.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			if gotRaw := ElysiaFrontendFormJSON(raw); string(gotRaw) != string(wantRaw) {
				t.Errorf("from JSON:\n%s\nwant:\n%s", gotRaw, wantRaw)
			}
		})
	}
}

// TestElysiaFrontendFormLeavesTheRest: only a gateway's catalogue changes;
// an execute's result, a document, a read resource and any other event go
// to Elysia's frontend as they are.
func TestElysiaFrontendFormLeavesTheRest(t *testing.T) {
	tests := []struct {
		typ     tools.EventType
		payload string
	}{
		{tools.EventResult, `{"type":"table","objects":[{"_REF_ID":"mcp_todo_create_todo_0_0","id":1,"inputs":{"x":1}}],"metadata":{"action":"execute","server":"todo","tool":"create_todo"}}`},
		{tools.EventResult, `{"type":"document","objects":[{"name":"a","content":"b"}],"metadata":{"action":"list","server":"todo"}}`},
		{tools.EventResult, `{"type":"table","objects":[{"name":"a","inputs":{}}],"metadata":{"action":"list"}}`},
		{tools.EventResult, `{"type":"table","objects":[{"name":"a","inputs":{}}],"metadata":{}}`},
		{tools.EventResult, `{"type":"table","objects":[{"name":"a"}],"metadata":{"action":"get_prompt","server":"e"}}`},
		{tools.EventResult, `not json`},
		{tools.EventText, `{"type":"response","metadata":{"action":"list","server":"todo"},"objects":[{"text":"hi"}]}`},
		{tools.EventStatus, `{"text":"Listing tools of todo..."}`},
	}
	for _, tt := range tests {
		env := tools.Envelope{Type: tt.typ, ID: "x-1", Payload: json.RawMessage(tt.payload)}
		if got := ElysiaFrontendForm(env); string(got.Payload) != tt.payload {
			t.Errorf("%s %s became %s", tt.typ, tt.payload, got.Payload)
		}
		raw, _ := tools.Marshal(env) // "not json" does not marshal: raw is nil
		if raw == nil {
			raw = json.RawMessage(`{"type":"result","payload":not json}`)
		}
		if got := ElysiaFrontendFormJSON(raw); string(got) != string(raw) {
			t.Errorf("%s from JSON became %s", raw, got)
		}
	}
}

func TestOneLine(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"  Create a todo.  ", "Create a todo."},
		{"\n\nFirst line\nsecond line", "First line"},
		{"tabs\tand   spaces", "tabs and spaces"},
		{"Résumé " + strings.Repeat("é", 20), "Résumé…"},
		{strings.Repeat("x", 30), strings.Repeat("x", 19) + "…"},
		{"one two, threefoldness", "one two…"},
	}
	for _, tt := range tests {
		got := oneLine(tt.in, 20)
		if got != tt.want {
			t.Errorf("oneLine(%q, 20) = %q, want %q", tt.in, got, tt.want)
		}
		if n := utf8.RuneCountInString(got); n > 20 {
			t.Errorf("oneLine(%q, 20) has %d characters", tt.in, n)
		}
	}
}

// TestWebSocketElysiaFrontendGetsCompactCatalogue: a query sent as Elysia's
// frontend sends it (with collection_names, route and mimick) gets the
// list result as a compact table and every other event as DESIGN.md's
// appendix has it; the same query without collection_names (this
// service's UI, the appendix's clients) gets the appendix unchanged.
func TestWebSocketElysiaFrontendGetsCompactCatalogue(t *testing.T) {
	h := newHarness(t, nil)
	ts := startServer(t, h)
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	conn := dialWS(t, ctx, ts, nil)

	appendix := webtest.AppendixEnvelopes("alice", "c1", "q1")
	read := func() []tools.Envelope {
		var got []tools.Envelope
		for range appendix {
			got = append(got, decodeEnvelope(t, wsRead(t, ctx, conn)))
		}
		return got
	}

	wsSend(t, ctx, conn, `{"user_id": "alice", "query": "list my todos", "query_id": "q1", "conversation_id": "c1", "collection_names": [], "route": "", "mimick": false}`)
	for i, got := range read() {
		want := appendix[i]
		if want.Type == tools.EventResult {
			want.Payload = json.RawMessage(`{"type":"table","objects":[{"name":"create_todo","description":"..."}],"metadata":{"server":"todo","action":"list"}}`)
		}
		if got.Type != want.Type || got.ID != want.ID || string(got.Payload) != string(want.Payload) {
			t.Errorf("Elysia's frontend got %s %s %s, want %s %s %s", got.Type, got.ID, got.Payload, want.Type, want.ID, want.Payload)
		}
	}

	wsSend(t, ctx, conn, `{"user_id": "alice", "conversation_id": "c1", "query_id": "q1", "query": "list my todos"}`)
	for i, got := range read() {
		if want := appendix[i]; got.Type != want.Type || string(got.Payload) != string(want.Payload) {
			t.Errorf("a client without collection_names got %s %s, want %s %s", got.Type, got.Payload, want.Type, want.Payload)
		}
	}
}
