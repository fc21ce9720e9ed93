package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
)

func TestMarshalKeepsHTMLCharacters(t *testing.T) {
	env := Envelope{Type: EventSelfHealingError, ID: "err-1", Payload: json.RawMessage(`{"feedback":"/priority: must be <= 5 & > 0"}`)}
	got, err := Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"self_healing_error","id":"err-1","user_id":"","conversation_id":"","query_id":"","payload":{"feedback":"/priority: must be <= 5 & > 0"}}`
	if string(got) != want {
		t.Errorf("Marshal =\n%s\nwant\n%s", got, want)
	}
	p, err := NewEnvelope(Event{Type: EventText, Payload: map[string]string{"text": "a<b"}}, "u", "c", "q")
	if err != nil {
		t.Fatal(err)
	}
	if string(p.Payload) != `{"text":"a<b"}` {
		t.Errorf("NewEnvelope payload = %s", p.Payload)
	}
}

func TestObjectKeepsOrder(t *testing.T) {
	got, err := Marshal(Object{{"error", ""}, {"b", 1}, {"a", Object{{"z", "<"}, {"y", nil}}}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"error":"","b":1,"a":{"z":"<","y":null}}`; string(got) != want {
		t.Errorf("Marshal(Object) = %s, want %s", got, want)
	}
	if _, err := Marshal(Object{{"f", func() {}}}); err == nil {
		t.Error("an unmarshallable member gave no error")
	}
}

// Marshal reuses its buffers: a result must not share memory with a later
// call's, whether that call succeeds or fails.
func TestMarshalResultsAreOwned(t *testing.T) {
	first, err := Marshal(map[string]string{"a": "first"})
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if _, err := Marshal(Object{{"a", "x"}, {"f", func() {}}}); err == nil {
			t.Fatal("an unmarshallable member gave no error")
		}
		if _, err := Marshal(map[string]string{"b": "second, longer than the first"}); err != nil {
			t.Fatal(err)
		}
	}
	if want := `{"a":"first"}`; string(first) != want {
		t.Errorf("after more calls the first result reads %s, want %s", first, want)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 200 {
				want := fmt.Sprintf(`{"i":%d,"j":%d}`, i, j)
				got, err := Marshal(Object{{"i", i}, {"j", j}})
				if err != nil || string(got) != want {
					t.Errorf("Marshal = %s, %v; want %s", got, err, want)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestAppendEnvelopeEmptyPayload(t *testing.T) {
	got, err := AppendEnvelope(nil, Envelope{Type: EventText, ID: "tex-1", Payload: json.RawMessage{}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"type":"text","id":"tex-1","user_id":"","conversation_id":"","query_id":"","payload":null}`; string(got) != want {
		t.Errorf("AppendEnvelope = %s, want %s", got, want)
	}
}

func TestWriteJSONStringIsMarshal(t *testing.T) {
	for _, s := range []string{"", "plain", "a<b>&c", "quote\" back\\slash", "tab\tnl\n", "\x00\x1f", "é ☃ \u2028\u2029", "\xff bad utf-8"} {
		var b bytes.Buffer
		WriteJSONString(&b, s)
		want, err := Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := b.String(); got != string(want) {
			t.Errorf("WriteJSONString(%q) = %s, want %s as Marshal writes it", s, got, want)
		}
	}
}

// FuzzAppendEnvelope: an envelope written member by member is what
// Marshal writes, whatever strings a client or server put in its ids.
func FuzzAppendEnvelope(f *testing.F) {
	f.Add("status", "sta-1", "u<1>", "c&2", "q\"3", `{"text":"x"}`)
	f.Add("completed", "com-1", "", "", "", ``)
	f.Add("text", "", "\x00\x1f", "é ☃ \u2028\u2029", "\xff bad utf-8", ``)
	f.Add("result", "res-1", "tab\tnl\n", `back\slash`, "<script>", `{"objects":[{"a":"<&>"}],"n":[1,2]}`)
	f.Fuzz(func(t *testing.T, typ, id, user, conv, query, payload string) {
		var p json.RawMessage
		if payload != "" {
			var b bytes.Buffer
			if json.Compact(&b, []byte(payload)) != nil {
				return // AppendEnvelope takes compact JSON only
			}
			p = b.Bytes()
		}
		env := Envelope{Type: EventType(typ), ID: id, UserID: user, ConversationID: conv, QueryID: query, Payload: p}
		want, err := Marshal(env)
		if err != nil {
			t.Fatal(err)
		}
		got, err := AppendEnvelope([]byte("data: "), env)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != "data: "+string(want) {
			t.Fatalf("AppendEnvelope =\n%s\nwant\ndata: %s", got, want)
		}
	})
}

// BenchmarkAppendEnvelope: a status event's envelope, as the stream and
// the save write every event.
func BenchmarkAppendEnvelope(b *testing.B) {
	env := Envelope{Type: EventStatus, ID: "sta-0123456789abcdef", UserID: "bench-3", ConversationID: "c-0123456789abcdef",
		QueryID: "q-0123456789abcdef", Payload: json.RawMessage(`{"text":"Listing the tools of todo…"}`)}
	buf := make([]byte, 0, 512)
	for b.Loop() {
		var err error
		if buf, err = AppendEnvelope(buf[:0], env); err != nil {
			b.Fatal(err)
		}
	}
}
