package web

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/elysia-go/elysia/tree"
	"github.com/elysia-go/elysia/web/internal/webtest"
)

// TestCompleteWithoutCompleter: a service whose Servers cannot pass on
// completions answers 501 with an empty completion, and a request MCP
// would not carry is refused first, with 400.
func TestCompleteWithoutCompleter(t *testing.T) {
	srv := New(Deps{Trees: tree.NewManager(nil), Servers: fakeServers{}}, &Options{Assets: testAssets})
	for _, c := range []struct {
		body   string
		status int
		want   string
	}{
		{`{"ref": {"type": "ref/prompt", "name": "plan"}, "argument": {"name": "day", "value": "Mo"}}`, http.StatusNotImplemented, `"error":"internal error`}, // as the other optional routes
		{`{"ref": {"type": "ref/tool", "name": "plan"}, "argument": {"name": "day"}}`, http.StatusBadRequest, "ref.type"},
		{`{"ref": {"type": "ref/resource"}, "argument": {"name": "day"}}`, http.StatusBadRequest, "needs a uri"},
		{`{"ref": {"type": "ref/prompt", "name": "plan"}}`, http.StatusBadRequest, "argument"},
	} {
		req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/api/servers/todo/complete", strings.NewReader(c.body))
		req.Host = webtest.Host
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		if body := rec.Body.String(); rec.Code != c.status || !strings.Contains(body, c.want) || !strings.Contains(body, `"completion":null`) {
			t.Errorf("%s: %d %s; want %d naming %q with \"completion\": null", c.body, rec.Code, body, c.status, c.want)
		}
	}
}

// TestCompletionCapped: a server's answer is cut to the caps, with
// has_more set, and is never null.
func TestCompletionCapped(t *testing.T) {
	many := make([]string, 0, 150)
	many = append(many, strings.Repeat("x", maxCompletionValueLen+1), "bad \xff utf-8")
	for range 148 {
		many = append(many, "v")
	}
	got := Completion{Values: many, Total: 150}.capped()
	if len(got.Values) != maxCompletionValues || !got.HasMore || got.Total != 150 || got.Values[0] != "v" {
		t.Errorf("capped: %d values (first %.10q), has_more %v, total %d; want %d short valid ones and has_more", len(got.Values), got.Values[0], got.HasMore, got.Total, maxCompletionValues)
	}
	if got := (Completion{}).capped(); got.Values == nil || got.HasMore {
		t.Errorf("an empty completion capped: %+v; want [] and no more", got)
	}
}
