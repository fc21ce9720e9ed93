package web

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/elysia-go/elysia/tools"
)

// TestWriteJSONAsMarshal: writeJSON sends the bytes tools.Marshal makes of
// the body (members in order, no HTML escaping), nested objects and
// ready JSON included; a body that does not marshal is a 500.
func TestWriteJSONAsMarshal(t *testing.T) {
	gin.SetMode(gin.TestMode)
	bodies := []object{
		ok(),
		ok(kv("result", ExecuteResult{Content: []map[string]any{{"type": "text", "text": "a <= 5 & \"q\" é \u2028"}}, Structured: map[string]any{"n": json.Number("12345678901234567890")}})),
		{kv("error", "boom <b>"), kv("result", nil)},
		ok(kv("inner", object{kv("z", 1), kv("a", []string{"x"})}), kv("list", []object{{kv("k", "v")}}), kv("raw", json.RawMessage(`{"a":[1,2]}`)), kv("nil", json.RawMessage(nil))),
		ok(kv("k\u00e9y \"quoted\"", map[string]int{"b": 2, "a": 1}), kv("empty", object{})),
	}
	for _, body := range bodies {
		want, err := tools.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		c, _ := gin.CreateTestContext(rec)
		writeJSON(c, http.StatusCreated, body)
		if rec.Code != http.StatusCreated || rec.Body.String() != string(want) {
			t.Errorf("writeJSON: %d %s\nwant %d %s", rec.Code, rec.Body, http.StatusCreated, want)
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json; charset=utf-8" {
			t.Errorf("Content-Type %q", ct)
		}
	}
	rec := httptest.NewRecorder()
	c, _ := gin.CreateTestContext(rec)
	writeJSON(c, http.StatusOK, ok(kv("n", math.Inf(1))))
	if rec.Code != http.StatusInternalServerError || rec.Body.String() != `{"error":"internal error: response not encodable"}` {
		t.Errorf("a body that does not marshal: %d %s", rec.Code, rec.Body)
	}
}

// BenchmarkWriteJSON writes an execute answer (POST
// /api/servers/:name/execute): list_todos' result on an empty list.
func BenchmarkWriteJSON(b *testing.B) {
	gin.SetMode(gin.TestMode)
	res := ExecuteResult{Content: []map[string]any{{"type": "text", "text": `{"todos":[],"total":0}`}}, Structured: map[string]any{"todos": []any{}, "total": json.Number("0")}}
	rec := httptest.NewRecorder()
	c, _ := gin.CreateTestContext(rec)
	b.ReportAllocs()
	for b.Loop() {
		rec.Body.Reset()
		writeJSON(c, http.StatusOK, ok(kv("result", res)))
	}
}

// TestExecuteResultAsMarshal: an execute's result is written as
// tools.Marshal writes it, whatever its content and structured content.
func TestExecuteResultAsMarshal(t *testing.T) {
	results := []ExecuteResult{
		{},
		{IsError: true, Content: []map[string]any{}},
		{Content: []map[string]any{nil, {}, {"type": "text", "text": "a <= 5 & \"q\" \xff \u2028", "truncated": true, "size": 70000}}},
		{Content: []map[string]any{{"type": "image", "data": "aGk=", "mimeType": "image/png", "annotations": map[string]any{"priority": 0.5, "audience": []any{"user"}}}}},
		{Content: []map[string]any{{"z": nil, "a": json.Number("1e400"), "m": []string{"x"}, "k9": 1, "k10": 2, "K": "upper"}}},
		{Structured: json.RawMessage("{ \"a\" : [1, 2],\n \"<\": \"&\" }")},
		{Structured: json.RawMessage(nil)},
		{Structured: map[string]any{"truncated": true, "size": 9, "prefix": "{\"a\""}},
		{Structured: []any{1, "two"}},
	}
	for _, r := range results {
		want, wantErr := tools.Marshal(r)
		var buf bytes.Buffer
		err := r.appendJSON(&buf)
		if (err != nil) != (wantErr != nil) || err == nil && buf.String() != string(want) {
			t.Errorf("%+v:\n got %s, %v\nwant %s, %v", r, buf.String(), err, want, wantErr)
		}
	}
	for _, r := range []ExecuteResult{
		{Structured: json.RawMessage(`{"a":`)},
		{Content: []map[string]any{{"n": math.NaN()}}},
		{Structured: map[string]any{"c": make(chan int)}},
	} {
		var buf bytes.Buffer
		if err := r.appendJSON(&buf); err == nil {
			t.Errorf("%+v written as %s; want the error tools.Marshal gives", r, buf.String())
		}
	}
}

// FuzzExecuteResultJSON holds appendJSON to tools.Marshal on any strings.
func FuzzExecuteResultJSON(f *testing.F) {
	f.Add("text", "a <= 5 & \u2028", "k", []byte(`{"a":[1, 2]}`))
	f.Add("\xff", "", "", []byte(`not json`))
	f.Fuzz(func(t *testing.T, key, value, key2 string, raw []byte) {
		r := ExecuteResult{Content: []map[string]any{{key: value, key2: 1.5, "type": "text"}}, Structured: json.RawMessage(raw)}
		want, wantErr := tools.Marshal(r)
		var buf bytes.Buffer
		err := r.appendJSON(&buf)
		if (err != nil) != (wantErr != nil) || err == nil && buf.String() != string(want) {
			t.Errorf("%+v:\n got %s, %v\nwant %s, %v", r, buf.String(), err, want, wantErr)
		}
	})
}
