package callstream

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestBounded: past MaxBytes a stream drops its oldest reports, never the
// answer, and takes nothing after the answer.
func TestBounded(t *testing.T) {
	st := NewMirror(strings.Repeat("a", IDLen), "s", "u", 0)
	big := make([]byte, MaxBytes/3)
	for range 5 {
		st.Add(big, false)
	}
	st.Add([]byte(`{"result":{}}`), true)
	st.Add([]byte(`{"late":true}`), false)
	evs, done, _, _, _ := st.Since(0, 0)
	if !done || st.bytes > MaxBytes || len(evs) != 3 || !evs[len(evs)-1].Final || evs[0].Seq != 4 {
		t.Errorf("kept %d events (first seq %d), %d bytes, done %v; want the last two reports and the answer", len(evs), evs[0].Seq, st.bytes, done)
	}
	st.AddAt(3, []byte(`{}`), false) // a mirror never goes back
	if evs2, _, _, _, _ := st.Since(0, 0); len(evs2) != 3 {
		t.Errorf("AddAt of an old seq changed the stream: %d events", len(evs2))
	}
}

// TestWriter: what a library writes, a JSON answer, SSE events cut
// anywhere (their lines ending in \n or \r\n), or an HTTP error, becomes the stream's messages, the answer
// last.
func TestWriter(t *testing.T) {
	id := json.RawMessage(`7`)
	for _, tt := range []struct {
		name  string
		write func(w *Writer)
		want  []string
	}{
		{"json", func(w *Writer) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":7,"result":{}}` + "\n"))
		}, []string{`{"jsonrpc":"2.0","id":7,"result":{}}`}},
		{"sse", func(w *Writer) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte("event: message\ndata: {\"method\":\"notifications/progress\"}\n\nevent: mess"))
			_, _ = w.Write([]byte("age\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n\n"))
		}, []string{`{"method":"notifications/progress"}`, `{"jsonrpc":"2.0","id":7,"result":{}}`}},
		{"sse CRLF", func(w *Writer) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte(": hello\r\nevent: message\r\ndata: {\"method\":\r\ndata:\"notifications/progress\"}\r\n\r"))
			_, _ = w.Write([]byte("\nevent: message\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\r\n\r\n"))
		}, []string{"{\"method\":\n\"notifications/progress\"}", `{"jsonrpc":"2.0","id":7,"result":{}}`}},
		{"http error", func(w *Writer) {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte("Invalid session ID\n"))
		}, []string{`{"error":{"code":-32603,"message":"HTTP 400: Invalid session ID"},"id":7,"jsonrpc":"2.0"}`}},
		{"no answer", func(w *Writer) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
		}, []string{`{"error":{"code":-32603,"message":"the call ended without an answer"},"id":7,"jsonrpc":"2.0"}`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := NewMirror(strings.Repeat("a", IDLen), "s", "u", 0)
			w := NewWriter(st, id)
			tt.write(w)
			w.Finish()
			evs, done, _, _, _ := st.Since(0, 0)
			var got []string
			for _, ev := range evs {
				got = append(got, string(ev.Data))
			}
			if !done || strings.Join(got, " | ") != strings.Join(tt.want, " | ") {
				t.Errorf("messages %q (done %v), want %q", got, done, tt.want)
			}
		})
	}
}

// TestParseEventID: only "<32 hex>-<seq>" is a stream's event id.
func TestParseEventID(t *testing.T) {
	good := strings.Repeat("ab", 16)
	if id, seq, ok := ParseEventID(good + "-12"); !ok || id != good || seq != 12 {
		t.Errorf("ParseEventID(%s-12) = %q %d %v", good, id, seq, ok)
	}
	for _, bad := range []string{"", "12", good, good + "-", good + "--1", good + "-x", "abc-1", good + "0-1"} {
		if _, _, ok := ParseEventID(bad); ok {
			t.Errorf("ParseEventID(%q) ok", bad)
		}
	}
}

// FuzzParseEventID: a client's Last-Event-ID never panics the parser, and
// what it accepts is a stream id and a seq that print back the same.
func FuzzParseEventID(f *testing.F) {
	f.Add(strings.Repeat("ab", 16) + "-3")
	f.Add("-1")
	f.Fuzz(func(t *testing.T, s string) {
		id, seq, ok := ParseEventID(s)
		if ok && (len(id) != IDLen || seq < 0 || !strings.HasPrefix(s, id+"-")) {
			t.Errorf("ParseEventID(%q) = %q %d", s, id, seq)
		}
	})
}
