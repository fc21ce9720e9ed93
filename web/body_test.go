package web

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestStalledBodyTimesOut: a request that announces a body and sends only
// part of it is answered 408 once BodyReadTimeout has passed, and its
// connection is closed, instead of being held open; a whole body on the
// same kind of connection is served as before.
func TestStalledBodyTimesOut(t *testing.T) {
	h := newHarness(t, &Options{BodyReadTimeout: 200 * time.Millisecond})
	ts := httptest.NewServer(h.srv.Handler())
	defer ts.Close()
	for _, path := range []string{"/init/tree/alice/c1", "/mcp"} {
		conn, err := net.DialTimeout("tcp", ts.Listener.Addr().String(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = conn.Close() }()
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second)) // the test's own bound
		_, _ = fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"low_mem", path)
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("POST %s with a stalled body: no answer within 10 s: %v", path, err)
		}
		_ = res.Body.Close()
		if path == "/init/tree/alice/c1" && res.StatusCode != http.StatusRequestTimeout {
			t.Errorf("POST %s with a stalled body: status %d, want 408", path, res.StatusCode)
		}
	}
	res, err := http.Post(ts.URL+"/init/tree/alice/c2", "application/json", strings.NewReader(`{"low_memory": false}`))
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Errorf("POST with a whole body: status %d, want 200", res.StatusCode)
	}
}

// TestDecodeJSONAgreesWithTwoPasses: decodeJSON, which decodes a body once
// and checks the required fields on the struct it filled, answers every
// body as decodeJSONChecked (the body parsed into a map for the check,
// then into the struct) does: the same error, or the same value; but for
// a required key written in another case, which encoding/json matches.
func TestDecodeJSONAgreesWithTwoPasses(t *testing.T) {
	type inner struct {
		A string `json:"a"`
	}
	type all struct {
		S     string          `json:"s"`
		N     int             `json:"n"`
		B     bool            `json:"b"`
		M     map[string]any  `json:"m"`
		L     []string        `json:"l"`
		P     *string         `json:"p"`
		I     any             `json:"i"`
		R     json.RawMessage `json:"r"`
		Bytes []byte          `json:"bytes"`
		O     inner           `json:"o"`
		Untag string
		Skip  string `json:"-"`
	}
	bodies := []string{
		``, `   `, `null`, `[]`, `[1]`, `"s"`, `1`, `true`, `{`, `{"s":`, `{"s": "x"`, `{}`, `{} x`, `{}{}`, `{} `,
		`{"s": "x"} {"s": "y"}`, `{"s": "x"}]`,
		`{"s": "x"}`, `{"s": ""}`, `{"s": null}`, `{"S": "x"}`, `{"s": 1}`, `{"s": "x", "s": ""}`, `{"s": "", "s": "x"}`,
		`{"n": 0}`, `{"n": 3}`, `{"n": "3"}`, `{"n": 1.5}`, `{"n": null}`,
		`{"b": false}`, `{"b": true}`, `{"b": ""}`,
		`{"m": {}}`, `{"m": {"k": 1}}`, `{"m": null}`, `{"m": ""}`, `{"m": []}`,
		`{"l": []}`, `{"l": ["a"]}`, `{"l": null}`, `{"l": [1]}`,
		`{"p": ""}`, `{"p": "x"}`, `{"p": null}`,
		`{"i": ""}`, `{"i": 0}`, `{"i": null}`, `{"i": {}}`, `{"i": 12345678901234567890}`,
		`{"r": ""}`, `{"r": null}`, `{"r": {"x": 1}}`, `{"r": 0}`,
		`{"bytes": ""}`, `{"bytes": "eA=="}`, `{"bytes": null}`, `{"bytes": "!"}`,
		`{"o": {}}`, `{"o": {"a": "x"}}`, `{"o": null}`, `{"o": ""}`,
		`{"Untag": "x"}`, `{"untag": "x"}`, `{"Untag": ""}`, `{"-": "x"}`, `{"Skip": "x"}`,
		`{"s": "x", "n": 2, "m": {"k": [1, 2.5, "v"]}, "unknown": true}`,
		"{\"s\": \"\u00e9\\u0000\"}", `{"s": "x"` + strings.Repeat(" ", 10) + `}`,
	}
	folded := map[string]string{`{"S": "x"}`: "s", `{"untag": "x"}`: "Untag"}
	fields := []string{"s", "n", "b", "m", "l", "p", "i", "r", "bytes", "o", "Untag", "untag", "-", "Skip", "nothing"}
	var cases [][]string
	cases = append(cases, nil)
	for _, f := range fields {
		cases = append(cases, []string{f})
	}
	cases = append(cases, []string{"s", "n"}, []string{"m", "s"}, []string{"o", "i", "p"})
	for _, body := range bodies {
		for _, required := range cases {
			for _, optional := range []bool{false, true} {
				var got, want all
				gotErr := decodeJSON([]byte(body), &got, optional, required...)
				wantErr := decodeJSONChecked([]byte(body), &want, optional, required...)
				if f, ok := folded[body]; ok && f == strings.Join(required, ",") {
					// The one difference: the key names the required field in
					// another case, which the decoding has always accepted.
					want = all{}
					_ = decodeJSONChecked([]byte(body), &want, optional)
					if gotErr != nil || !reflect.DeepEqual(got, want) {
						t.Errorf("body %q, required %q: %v, %+v; want the field filled as %+v", body, required, gotErr, got, want)
					}
					continue
				}
				if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
					t.Errorf("body %q, required %q, optional %t: error %v; want %v", body, required, optional, gotErr, wantErr)
					continue
				}
				if wantErr == nil && !reflect.DeepEqual(got, want) {
					t.Errorf("body %q, required %q: decoded %+v; want %+v", body, required, got, want)
				}
			}
		}
	}
	// Not a struct: a map is checked as before.
	for _, body := range []string{`{"s": ""}`, `{"s": "x"}`, `{}`, `null`} {
		var got, want map[string]any
		gotErr := decodeJSON([]byte(body), &got, false, "s")
		wantErr := decodeJSONChecked([]byte(body), &want, false, "s")
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || !reflect.DeepEqual(got, want) {
			t.Errorf("map, body %q: %v %v; want %v %v", body, got, gotErr, want, wantErr)
		}
	}
}

// BenchmarkDecodeJSON decodes an execute body (POST
// /api/servers/:name/execute) with its required tool_name.
func BenchmarkDecodeJSON(b *testing.B) {
	body := []byte(`{"tool_name": "list_todos", "tool_inputs": {"status": "active"}}`)
	b.ReportAllocs()
	for b.Loop() {
		var dst executeBody
		if err := decodeJSON(body, &dst, false, "tool_name"); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzExecuteBody holds executeBody.decodeFast to decodeJSON's general
// way: a body it takes decodes to the same values there.
func FuzzExecuteBody(f *testing.F) {
	for _, s := range []string{
		`{"tool_name":"create_todo","tool_inputs":{"title":"buy <milk>","priority":3,"tags":["a",1.5e3,null,true]}}`,
		`{"tool_name":"list_todos","tool_inputs":null,"extra":[1]}`,
		`{"tool_name":"t"}`, `{"tool_name":""}`, `{"Tool_Name":"t"}`, `{"tool_name":"t","tool_name":"u"}`,
		`{"tool_name":"t\u00e9","tool_inputs":{"k":"\ud800","k":2}}`, `{"tool_name":"t","tool_inputs":[1]}`,
		` {"tool_inputs":{"a":{"b":{}}}, "tool_name":"x"} `, `null`, `[]`, `{"tool_name":5}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var fast executeBody
		if !fast.decodeFast(body) {
			return
		}
		var general executeBody
		if !once(body, &general, []string{"tool_name"}) {
			if err := decodeJSONChecked(body, &general, false, "tool_name"); err != nil {
				t.Fatalf("%q: decodeFast took it, decodeJSON refuses it: %v", body, err)
			}
		}
		if !reflect.DeepEqual(fast, general) {
			t.Errorf("%q: decodeFast = %#v, decodeJSON = %#v", body, fast, general)
		}
	})
}
