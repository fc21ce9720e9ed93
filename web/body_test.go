package web

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/elysia-go/elysia/web/internal/webtest"
)

func TestBodyOverLimitWithoutContentLength(t *testing.T) {
	h := newHarness(t, nil)
	body := `{"tool_name": "` + strings.Repeat("x", DefaultMaxBodyBytes) + `"}`
	// A reader of unknown length makes the request chunked, so only
	// http.MaxBytesReader can catch it.
	req := httptest.NewRequestWithContext(t.Context(), "POST", "/api/servers/todo/execute", io.MultiReader(strings.NewReader(body)))
	req.ContentLength = -1
	req.Host = webtest.Host
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.srv.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("status = %d, want 413: %s", rec.Code, rec.Body)
	}
}
