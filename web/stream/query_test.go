package stream

import (
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/elysia-go/elysia/internal/testenv"
	"github.com/elysia-go/elysia/web"
)

// checkGolden compares a JSON response's status and body with
// testdata/<name>.golden, or rewrites it with -update.
func checkGolden(t *testing.T, name string, rec *httptest.ResponseRecorder) {
	t.Helper()
	testenv.GoldenResponse(t, filepath.Join("testdata", name+".golden"), rec.Code, rec.Body.Bytes(), nil)
}

// TestQueryRefusals: a query refused before it starts gets a JSON error
// with its status, not a stream.
func TestQueryRefusals(t *testing.T) {
	big := `{"query": "` + strings.Repeat("x", web.DefaultMaxBodyBytes) + `"}`
	tests := []struct {
		name, method, path, body string
		wantStatus               int
	}{
		{"query_missing_query", "POST", "/query/alice/c1", `{"query_id": "q1"}`, 400},
		{"query_empty_query", "POST", "/query/alice/c1", `{"query": ""}`, 400},
		{"query_bad_json", "POST", "/query/alice/c1", `{"query": "hi", "query_id"`, 400},
		{"query_not_object", "POST", "/query/alice/c1", `["hi"]`, 400},
		{"query_trailing_data", "POST", "/query/alice/c1", `{"query": "hi"} x`, 400},
		{"query_busy", "POST", "/query/alice/c1", `{"query": "busy"}`, 409},
		{"query_bad_query_id", "POST", "/query/alice/c1", `{"query": "hi", "query_id": "q\u00001"}`, 400},
		{"query_long_conversation_id", "POST", "/query/alice/" + strings.Repeat("c", 257), `{"query": "hi"}`, 400},
		{"query_too_large", "POST", "/query/alice/c1", big, 413},
	}
	h := newHarness(t, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := h.do(t, tt.method, tt.path, tt.body)
			if rec.Code != tt.wantStatus {
				t.Errorf("status = %d, want %d; body %s", rec.Code, tt.wantStatus, rec.Body)
			}
			if got := rec.Header().Get("Content-Type"); !strings.HasPrefix(got, "application/json") {
				t.Errorf("Content-Type = %q, want JSON", got)
			}
			checkGolden(t, tt.name, rec)
		})
	}
}
