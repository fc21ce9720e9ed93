package sessions

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/elysia-go/elysia/mcpendpoint/internal/jsonrpc"
)

// FuzzUntagAnswer: a client's answer never panics the id reader; a
// request tagged here comes back as the number mcp-go gave it, and no
// answer is both this replica's and another's.
func FuzzUntagAnswer(f *testing.F) {
	h := &Hub{Config: Config{Tag: NewReplicaTag()}}
	f.Add([]byte(`{"jsonrpc":"2.0","id":"`+h.Tag+`.7","result":{}}`), int64(7))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"aaaaaaaaaaaa.1","error":{}}`), int64(1))
	f.Add([]byte(`{"id":3}`), int64(-1))
	f.Fuzz(func(t *testing.T, body []byte, n int64) {
		m, ok := jsonrpc.Decode(body)
		if !ok || !m.IsResponse() {
			m = &jsonrpc.Message{}
		}
		_, mine, elsewhere := h.untagAnswer(body, m)
		if mine && elsewhere {
			t.Fatalf("untagAnswer(%s): mine and elsewhere", body)
		}
		req := h.tagRequest([]byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"elicitation/create"}`, n)))
		var tagged struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(req, &tagged); err != nil || tagged.ID != fmt.Sprintf("%s.%d", h.Tag, n) {
			t.Fatalf("tagRequest(%d) = %s", n, req)
		}
		answer := []byte(`{"jsonrpc":"2.0","id":"` + tagged.ID + `","result":{}}`)
		am, _ := jsonrpc.Decode(answer)
		back, mine, _ := h.untagAnswer(answer, am)
		if !mine || !strings.Contains(string(back), fmt.Sprintf(`"id":%d`, n)) {
			t.Fatalf("untagAnswer of %s = %s, %v", tagged.ID, back, mine)
		}
	})
}

// TestTagWriter: the events of a stream, cut anywhere and their lines
// ending in \n, \r\n or \r, pass as they were, but for the id of a
// request, tagged; what is not an event stream passes untouched.
func TestTagWriter(t *testing.T) {
	h := &Hub{Config: Config{Tag: "0123456789ab"}}
	in := ": hi\r\n\r\n" +
		"event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\r\n\r\n" +
		"event: message\rdata: {\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"elicitation/create\"}\r\r" +
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"
	want := ": hi\r\n\r\n" +
		"event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\r\n\r\n" +
		"event: message\ndata: {\"id\":\"0123456789ab.3\",\"jsonrpc\":\"2.0\",\"method\":\"elicitation/create\"}\n\n" +
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"
	for size := 1; size <= len(in); size++ {
		rec := httptest.NewRecorder()
		w := &tagWriter{ResponseWriter: rec, hub: h}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for s := in; s != ""; s = s[min(size, len(s)):] {
			_, _ = w.Write([]byte(s[:min(size, len(s))]))
		}
		if got := rec.Body.String(); got != want {
			t.Fatalf("writes of %d bytes passed on as %q, want %q", size, got, want)
		}
	}
	rec := httptest.NewRecorder()
	w := &tagWriter{ResponseWriter: rec, hub: h}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	body := `{"jsonrpc":"2.0","id":3,"method":"elicitation/create"}` + "\n\n"
	if _, _ = w.Write([]byte(body)); rec.Body.String() != body {
		t.Errorf("a JSON body passed on as %q, want it untouched", rec.Body.String())
	}
}
