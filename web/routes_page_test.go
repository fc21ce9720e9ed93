package web

import (
	"encoding/json"
	"net/http"
	"regexp"
	"testing"
)

// TestRootRedirect: a browser asking for / is sent to a new conversation
// of the page user (a fresh id each time); an API client gets JSON 404.
func TestRootRedirect(t *testing.T) {
	const browser = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
	for _, tt := range []struct {
		user, want string
	}{{"", "cli"}, {"al ice", "al%20ice"}} {
		h := newHarness(t, &Options{PageUser: tt.user})
		a := h.do(t, "GET", "/", "", "Accept", browser)
		b := h.do(t, "GET", "/", "", "Accept", browser)
		re := regexp.MustCompile(`^/tree/` + regexp.QuoteMeta(tt.want) + `/c-[0-9a-f]{16}$`)
		if a.Code != http.StatusFound || !re.MatchString(a.Header().Get("Location")) {
			t.Errorf("PageUser %q: GET / = %d to %q; want 302 to /tree/%s/c-<16 hex>", tt.user, a.Code, a.Header().Get("Location"), tt.want)
		}
		if a.Header().Get("Location") == b.Header().Get("Location") {
			t.Errorf("two visits to / got the same conversation %q", a.Header().Get("Location"))
		}
		if rec := h.do(t, "GET", "/", "", "Accept", "application/json"); rec.Code != http.StatusNotFound {
			t.Errorf("GET / as JSON = %d; want 404", rec.Code)
		}
	}
}

// TestAPIInfo: /api/info names the model and says whether keys are
// needed; with keys it needs one itself.
func TestAPIInfo(t *testing.T) {
	model := ModelInfo{Provider: "openai", Model: "gpt-test", BaseURL: "http://10.0.0.1/v1"}
	open := newHarness(t, &Options{Model: model})
	rec := open.do(t, "GET", "/api/info", "")
	var got struct {
		Model string `json:"model"`
		Auth  bool   `json:"auth"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || rec.Code != http.StatusOK {
		t.Fatalf("GET /api/info = %d %s (%v)", rec.Code, rec.Body, err)
	}
	if got.Model != "openai/gpt-test" || got.Auth {
		t.Errorf("GET /api/info = %+v; want openai/gpt-test, auth false", got)
	}
	if regexp.MustCompile(`10\.0\.0\.1`).Match(rec.Body.Bytes()) {
		t.Errorf("GET /api/info shows the model's base URL: %s", rec.Body)
	}
	keyed := newHarness(t, &Options{Keys: testKeys, Model: model})
	if rec := keyed.do(t, "GET", "/api/info", ""); rec.Code != http.StatusUnauthorized {
		t.Errorf("GET /api/info without a key = %d; want 401", rec.Code)
	}
	rec = keyed.do(t, "GET", "/api/info", "", "Authorization", "Bearer key-alice")
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || rec.Code != http.StatusOK || !got.Auth {
		t.Errorf("GET /api/info with a key = %d %s; want auth true", rec.Code, rec.Body)
	}
}
