package stream

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/elysia-go/elysia/web"
)

// FuzzQueryBody checks that decoding a query body never panics, accepts
// only objects with a non-empty string "query" (and a string "query_id" if
// any), and answers everything else with a 400 naming the problem.
func FuzzQueryBody(f *testing.F) {
	for _, seed := range []string{
		`{"query": "hi"}`, `{"query": "hi", "query_id": "q1"}`, `{"query": ""}`, `{}`, `[]`, `null`,
		`{"query": 5}`, `{"query": "a"} x`, `{"query`, `"str"`, ``, `{"query": "a", "query_id": null}`,
		`{"query": "\u0000"}`, `{"query": "a", "query": 1}`, `{"query": "a", "query_id": "q\u0000"}`,
	} {
		f.Add(seed)
	}
	h := newHarness(f, nil)
	h.runner.plain = true
	f.Fuzz(func(t *testing.T, body string) {
		rec := h.do(t, "POST", "/query/alice/c1", body)
		q, err := h.st.decodeQueryBody([]byte(body))
		if err != nil {
			if rec.Code != http.StatusBadRequest {
				t.Fatalf("handler status %d for %q, want 400", rec.Code, body)
			}
			if status := web.StatusOf(err); status != http.StatusBadRequest {
				t.Fatalf("status %d for %q", status, body)
			}
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		if rec.Code != http.StatusOK {
			t.Fatalf("handler status %d for accepted body %q", rec.Code, body)
		}
		if q.Query == "" || q.QueryID == "" {
			t.Fatalf("accepted %q as %+v", body, q)
		}
		var check struct {
			Query   string  `json:"query"`
			QueryID *string `json:"query_id"`
		}
		if json.Unmarshal([]byte(body), &check) != nil {
			t.Fatalf("accepted invalid body %q", body)
		}
	})
}

func TestQueryBodyThroughHandlerFuzzSeeds(t *testing.T) {
	h := newHarness(t, nil)
	for _, body := range []string{`{"query": 5}`, `null`, `"str"`, `{"query": "a"} x`} {
		if rec := h.do(t, "POST", "/query/alice/c1", body); rec.Code != http.StatusBadRequest {
			t.Errorf("%s: status %d", body, rec.Code)
		}
	}
}
