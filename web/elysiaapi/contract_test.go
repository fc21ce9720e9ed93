package elysiaapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/elysia-go/elysia/web"
)

// elysiaFixture is one file of testdata/elysia: a request Elysia's
// frontend (v0.2.5) sends and the shape Elysia's backend answers with,
// written from elysia/api (Source says where).
//
// Shape holds the keys the answer must have: a string names the JSON type
// of the value ("string", "bool", "number", "object", "array"), an object
// the shape of a nested object, an array of one shape the shape of every
// element of a non-empty array. Keys beyond the shape are allowed.
type elysiaFixture struct {
	Source string          `json:"source"`
	Method string          `json:"method"`
	Path   string          `json:"path"`
	Body   json.RawMessage `json:"body"`
	Status int             `json:"status"`
	Shape  json.RawMessage `json:"shape"`
}

// TestElysiaFrontendRoutes runs every fixture against a fresh service
// (a real tree and SQLite store holding alice's conversation c1).
func TestElysiaFrontendRoutes(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "elysia", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".json"), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var fx elysiaFixture
			if err := json.Unmarshal(raw, &fx); err != nil {
				t.Fatalf("fixture: %v", err)
			}
			h := newHarness(t, nil)
			body := ""
			if len(fx.Body) > 0 {
				body = string(fx.Body)
			}
			rec := h.do(t, fx.Method, fx.Path, body)
			if rec.Code != fx.Status {
				t.Errorf("%s %s: status %d, want %d: %s", fx.Method, fx.Path, rec.Code, fx.Status, rec.Body)
			}
			var got any
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatalf("answer is not JSON: %v: %s", err, rec.Body)
			}
			var shape any
			if err := json.Unmarshal(fx.Shape, &shape); err != nil {
				t.Fatalf("fixture shape: %v", err)
			}
			for _, p := range checkShape("", shape, got) {
				t.Errorf("%s %s (%s): %s\nanswer: %s", fx.Method, fx.Path, fx.Source, p, rec.Body)
			}
		})
	}
}

// checkShape lists how v differs from shape (see elysiaFixture).
func checkShape(at string, shape, v any) []string {
	switch s := shape.(type) {
	case string:
		if got := jsonType(v); got != s {
			return []string{fmt.Sprintf("%s is %s, want %s", at, got, s)}
		}
	case map[string]any:
		obj, ok := v.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s is %s, want object", at, jsonType(v))}
		}
		var out []string
		for k, sub := range s {
			x, ok := obj[k]
			if !ok {
				out = append(out, fmt.Sprintf("%s.%s is missing", at, k))
				continue
			}
			out = append(out, checkShape(at+"."+k, sub, x)...)
		}
		return out
	case []any:
		arr, ok := v.([]any)
		if !ok {
			return []string{fmt.Sprintf("%s is %s, want array", at, jsonType(v))}
		}
		if len(arr) == 0 {
			return []string{fmt.Sprintf("%s is empty, want elements", at)}
		}
		var out []string
		for i, x := range arr {
			out = append(out, checkShape(fmt.Sprintf("%s[%d]", at, i), s[0], x)...)
		}
		return out
	}
	return nil
}

func jsonType(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case bool:
		return "bool"
	case float64:
		return "number"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// TestElysiaInitUserSettings checks that the Weaviate settings Elysia's
// check() reports are not claimed as set: they are listed as not needed
// and left out of correct_settings.
func TestElysiaInitUserSettings(t *testing.T) {
	h := newHarness(t, nil)
	rec := h.do(t, "POST", "/init/user/bob", "")
	var body struct {
		UserExists      bool            `json:"user_exists"`
		CorrectSettings map[string]bool `json:"correct_settings"`
		NotNeeded       []string        `json:"settings_not_needed"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || rec.Code != 200 {
		t.Fatalf("%d %v: %s", rec.Code, err, rec.Body)
	}
	if body.UserExists {
		t.Error("a new user exists")
	}
	for _, k := range []string{"wcd_url", "wcd_api_key"} {
		if _, ok := body.CorrectSettings[k]; ok {
			t.Errorf("correct_settings reports %s, which this backend does not use", k)
		}
	}
	if len(body.NotNeeded) == 0 {
		t.Error("settings_not_needed is empty")
	}
	for k, v := range body.CorrectSettings {
		if !v {
			t.Errorf("correct_settings.%s = false with a model configured", k)
		}
	}
	if rec := h.do(t, "POST", "/init/user/bob", ""); !strings.Contains(rec.Body.String(), `"user_exists":true`) {
		t.Errorf("second init: %s, want user_exists true", rec.Body)
	}
}

// TestElysiaSavedConversationRoundTrip deletes a conversation through the
// /db routes and rates an answer through /feedback, reading both back.
func TestElysiaSavedConversationRoundTrip(t *testing.T) {
	h := newHarness(t, nil)
	rec := h.do(t, "GET", "/db/alice/load_tree/c1", "")
	var loaded struct {
		Rebuild []struct {
			Type    string         `json:"type"`
			QueryID string         `json:"query_id"`
			Payload map[string]any `json:"payload"`
		} `json:"rebuild"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &loaded); err != nil || len(loaded.Rebuild) == 0 {
		t.Fatalf("load_tree: %v: %s", err, rec.Body)
	}
	if first := loaded.Rebuild[0]; first.Type != "user_prompt" || first.Payload["prompt"] != "hi" || first.QueryID != "q1" {
		t.Errorf("rebuild starts with %+v, want the user_prompt of q1, \"hi\"", first)
	}
	if last := loaded.Rebuild[len(loaded.Rebuild)-1]; last.Type != "completed" {
		t.Errorf("rebuild ends with %q, want completed", last.Type)
	}

	for _, rating := range []string{"1", "2"} {
		rec := h.do(t, "POST", "/feedback/add", `{"user_id": "alice", "conversation_id": "c1", "query_id": "q1", "feedback": `+rating+`}`)
		if rec.Code != 200 {
			t.Fatalf("feedback/add: %d %s", rec.Code, rec.Body)
		}
	}
	rec = h.do(t, "GET", "/feedback/metadata/alice", "")
	today := time.Now().UTC().Format(time.DateOnly)
	if !strings.Contains(rec.Body.String(), `"total_feedback":1`) || !strings.Contains(rec.Body.String(), `"superpositive":1`) ||
		!strings.Contains(rec.Body.String(), today) {
		t.Errorf("feedback/metadata after rating q1 twice: %s", rec.Body)
	}

	if rec := h.do(t, "DELETE", "/db/alice/delete_tree/c1", ""); rec.Code != 200 {
		t.Fatalf("delete_tree: %d %s", rec.Code, rec.Body)
	}
	if rec := h.do(t, "GET", "/db/alice/saved_trees", ""); !strings.Contains(rec.Body.String(), `"trees":{}`) {
		t.Errorf("saved_trees after delete_tree: %s", rec.Body)
	}
	if rec := h.do(t, "DELETE", "/db/alice/delete_tree/c1", ""); rec.Code != 404 {
		t.Errorf("second delete_tree: %d, want 404", rec.Code)
	}
}

// TestElysiaRoutesAuth checks the new routes against keys: another user's
// paths and bodies are refused with 403, and a missing key with 401.
func TestElysiaRoutesAuth(t *testing.T) {
	h := newHarness(t, &web.Options{Keys: testKeys})
	alice := "Bearer key-alice"
	for _, r := range []struct{ method, path, body string }{
		{"GET", "/user/config/bob/list", ""},
		{"GET", "/db/bob/saved_trees", ""},
		{"DELETE", "/db/bob/delete_tree/c1", ""},
		{"GET", "/collections/bob/list", ""},
		{"GET", "/feedback/metadata/bob", ""},
		{"POST", "/feedback/add", `{"user_id": "bob", "conversation_id": "c1", "query_id": "q1", "feedback": 1}`},
		{"POST", "/util/follow_up_suggestions", `{"user_id": "bob", "conversation_id": "c1"}`},
	} {
		if rec := h.do(t, r.method, r.path, r.body, "Authorization", alice); rec.Code != http.StatusForbidden {
			t.Errorf("%s %s with alice's key: %d, want 403: %s", r.method, r.path, rec.Code, rec.Body)
		}
		if rec := h.do(t, r.method, r.path, r.body); rec.Code != http.StatusUnauthorized {
			t.Errorf("%s %s without a key: %d, want 401", r.method, r.path, rec.Code)
		}
	}
	if rec := h.do(t, "GET", "/db/alice/saved_trees", "", "Authorization", alice); rec.Code != 200 {
		t.Errorf("alice's own saved_trees: %d %s", rec.Code, rec.Body)
	}
}

// TestProcessCollectionSocket checks that every message on
// /ws/process_collection gets an error in the socket's shape, and that the
// socket stays open for the next.
func TestProcessCollectionSocket(t *testing.T) {
	h := newHarness(t, nil)
	srv := httptest.NewServer(h.srv.Handler())
	t.Cleanup(srv.Close)
	conn, _, err := websocket.Dial(t.Context(), "ws"+strings.TrimPrefix(srv.URL, "http")+"/ws/process_collection", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.CloseNow() }()
	for _, name := range []string{"Docs", "Tickets"} {
		msg := `{"user_id": "alice", "collection_name": "` + name + `"}`
		if err := conn.Write(t.Context(), websocket.MessageText, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		_, data, err := conn.Read(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Type           string `json:"type"`
			CollectionName string `json:"collection_name"`
			Error          string `json:"error"`
		}
		if err := json.Unmarshal(data, &got); err != nil || got.Type != "error" || got.CollectionName != name ||
			!strings.Contains(got.Error, "not processed here") {
			t.Errorf("answer to %s = %s (%v)", msg, data, err)
		}
	}
}

// scriptedText is a TextModel answering with text, or failing with err.
type scriptedText struct {
	text string
	err  error
}

func (m scriptedText) Complete(ctx context.Context, prompt string) (string, error) {
	if !strings.Contains(prompt, "mcp_todo") {
		return "", errors.New("prompt without the tree's tools")
	}
	return m.text, m.err
}

// TestFollowUpSuggestions checks the model's suggestions, list markers
// taken off, and the fallback without a model or when it fails: built from
// the tree's tools and the last query, the same on every call.
func TestFollowUpSuggestions(t *testing.T) {
	const body = `{"user_id": "alice", "conversation_id": "c1"}`
	suggestions := func(h *harness) []string {
		t.Helper()
		rec := h.do(t, "POST", "/util/follow_up_suggestions", body)
		var got struct {
			Suggestions []string `json:"suggestions"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || rec.Code != 200 {
			t.Fatalf("%d %v: %s", rec.Code, err, rec.Body)
		}
		return got.Suggestions
	}

	h := newHarnessModel(t, nil, scriptedText{text: "1. Which todos are due today?\n- Mark \"Buy milk\" done\n\nList my tags\nOne too many"})
	want := []string{"Which todos are due today?", "Mark \"Buy milk\" done", "List my tags"}
	if got := suggestions(h); !slices.Equal(got, want) {
		t.Errorf("from the model = %q, want %q", got, want)
	}

	h = newHarnessModel(t, nil, scriptedText{err: errors.New("provider down")})
	failed := suggestions(h)
	h = newHarness(t, nil) // no model: the offline planner's case
	first, second := suggestions(h), suggestions(h)
	if len(first) == 0 || !slices.Equal(first, second) || !slices.Equal(first, failed) {
		t.Errorf("without a model: %q then %q (after a model failure %q), want the same non-empty list", first, second, failed)
	}
	if !slices.Contains(first, "What can the todo tools do?") {
		t.Errorf("without a model = %q, want one about the todo tools", first)
	}
}

// TestTreeConfigBesideTree checks that /tree/config/:user/:conversation
// does not take /tree/:user/:conversation from a user named "config", and
// that it checks the key against the user it names.
func TestTreeConfigBesideTree(t *testing.T) {
	h := newHarness(t, nil)
	if rec := h.do(t, "GET", "/tree/config/c1", ""); rec.Code != 200 || !strings.Contains(rec.Body.String(), `"tree":{"name":"Base"`) {
		t.Errorf("GET /tree/config/c1 (user config's tree): %d %.100s", rec.Code, rec.Body)
	}
	k := newHarness(t, &web.Options{Keys: testKeys})
	for path, want := range map[string]int{"/tree/config/alice/c1": 200, "/tree/config/bob/c1": 403, "/tree/config/alice/c1/x": 404, "/tree/alice/c1/x": 404} {
		if rec := k.do(t, "GET", path, "", "Authorization", "Bearer key-alice"); rec.Code != want {
			t.Errorf("GET %s with alice's key: %d, want %d: %s", path, rec.Code, want, rec.Body)
		}
	}
}

// TestProcessCollectionSocketDrained checks that Drain closes a collection
// socket with "going away", as it does web's own sockets.
func TestProcessCollectionSocketDrained(t *testing.T) {
	h := newHarness(t, nil)
	srv := httptest.NewServer(h.srv.Handler())
	t.Cleanup(srv.Close)
	conn, _, err := websocket.Dial(t.Context(), "ws"+strings.TrimPrefix(srv.URL, "http")+"/ws/process_collection", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.CloseNow() }()
	// One exchange first, so that the socket is tracked before Drain.
	if err := conn.Write(t.Context(), websocket.MessageText, []byte(`{"user_id": "alice", "collection_name": "Docs"}`)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := conn.Read(t.Context()); err != nil {
		t.Fatal(err)
	}
	drained := make(chan error, 1)
	go func() { drained <- h.srv.Drain(t.Context()) }()
	_, _, err = conn.Read(t.Context())
	if got := websocket.CloseStatus(err); got != websocket.StatusGoingAway {
		t.Errorf("collection socket after Drain: %v (status %d), want closed with %d", err, got, websocket.StatusGoingAway)
	}
	if err := <-drained; err != nil {
		t.Errorf("Drain = %v, want nil", err)
	}
}
