package reply

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestRewrite: a Reply replaces the result of mcp-go's
// response, as a JSON body or an SSE event (its lines ending in \n or
// \r\n), and leaves notifications.
func TestRewrite(t *testing.T) {
	r := &Reply{}
	resp := []byte(`{"jsonrpc":"2.0","id":7,"result":{"content":[],"resultType":"complete"}}` + "\n")
	if r.rewrite(resp) != nil {
		t.Error("rewritten with no reply")
	}
	r.SetResult([]byte(`{"resultType":"task","taskId":"t1"}`))
	if got := string(r.rewrite(resp)); got != `{"jsonrpc":"2.0","id":7,"result":{"resultType":"task","taskId":"t1"}}` {
		t.Errorf("JSON rewritten to %s", got)
	}
	if r.rewrite([]byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{}}`)) != nil {
		t.Error("a notification rewritten")
	}
	rec := httptest.NewRecorder()
	w := &Writer{ResponseWriter: rec, Reply: r}
	_, _ = w.Write([]byte("event: message\ndata: " + strings.TrimSpace(string(resp)) + "\n\n"))
	if got := rec.Body.String(); !strings.HasPrefix(got, "event: message\ndata: {") || !strings.Contains(got, `"taskId":"t1"`) || !strings.HasSuffix(got, "\n\n") {
		t.Errorf("SSE rewritten to %q", got)
	}
	rec = httptest.NewRecorder()
	w = &Writer{ResponseWriter: rec, Reply: r}
	_, _ = w.Write([]byte("event: message\r\ndata: " + strings.TrimSpace(string(resp)) + "\r\n\r\n"))
	if got := rec.Body.String(); !strings.HasPrefix(got, "event: message\ndata: {") || !strings.Contains(got, `"taskId":"t1"`) || !strings.HasSuffix(got, "\n\n") {
		t.Errorf("SSE with CRLF lines rewritten to %q", got)
	}
	e := &Reply{}
	e.SetError(-32021, "needs tasks", nil)
	rec = httptest.NewRecorder()
	rec.Header().Set("Content-Type", "application/json")
	w = &Writer{ResponseWriter: rec, Reply: e}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(resp)
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), `"code":-32021`) || strings.Contains(rec.Body.String(), `"result"`) {
		t.Errorf("error reply: %d %s", rec.Code, rec.Body.String())
	}
}
