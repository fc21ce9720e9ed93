package jsonrpc

import (
	"encoding/json"
	"testing"
)

func TestDecodeKinds(t *testing.T) {
	for _, tt := range []struct {
		name, in                    string
		ok, request, notif, respons bool
	}{
		{"request", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, true, true, false, false},
		{"string id", ` {"jsonrpc":"2.0","id":"a","method":"x","params":{}} `, true, true, false, false},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, true, false, true, false},
		{"null id request", `{"jsonrpc":"2.0","id":null,"method":"x"}`, true, false, false, false},
		{"result", `{"jsonrpc":"2.0","id":3,"result":{}}`, true, false, false, true},
		{"error, null id", `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}`, true, false, false, true},
		{"no version", `{"id":1,"method":"x"}`, false, false, false, false},
		{"another version", `{"jsonrpc":"1.0","id":1,"method":"x"}`, false, false, false, false},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"x"}]`, false, false, false, false},
		{"neither", `{"jsonrpc":"2.0","id":1}`, false, false, false, false},
		{"not JSON", `{"jsonrpc":"2.0",`, false, false, false, false},
		{"empty", ``, false, false, false, false},
	} {
		m, ok := Decode([]byte(tt.in))
		if ok != tt.ok {
			t.Errorf("%s: Decode ok = %v, want %v", tt.name, ok, tt.ok)
			continue
		}
		if !ok {
			continue
		}
		if m.IsRequest() != tt.request || m.IsNotification() != tt.notif || m.IsResponse() != tt.respons {
			t.Errorf("%s: request %v notification %v response %v; want %v %v %v", tt.name,
				m.IsRequest(), m.IsNotification(), m.IsResponse(), tt.request, tt.notif, tt.respons)
		}
	}
}

func TestStringOrNumberID(t *testing.T) {
	for in, want := range map[string]bool{`1`: true, `-2`: true, `"a"`: true, `1.5`: true, `null`: false, `{}`: false, `[1]`: false, `true`: false} {
		m, ok := Decode([]byte(`{"jsonrpc":"2.0","id":` + in + `,"method":"x"}`))
		if !ok || m.StringOrNumberID() != want {
			t.Errorf("id %s: StringOrNumberID = %v, want %v", in, ok && m.StringOrNumberID(), want)
		}
	}
}

func TestMeta(t *testing.T) {
	m, _ := Decode([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{
		"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}}}`))
	meta := m.Meta()
	if meta.ProtocolVersion != "2026-07-28" || string(meta.ClientCapabilities) != `{"sampling":{}}` {
		t.Errorf("Meta = %+v", meta)
	}
	for _, in := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"x"}`,
		`{"jsonrpc":"2.0","id":1,"method":"x","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":7}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"x","params":"_meta"}`,
	} {
		m, _ := Decode([]byte(in))
		if got := m.Meta(); got.ProtocolVersion != "" {
			t.Errorf("Meta of %s = %+v, want none", in, got)
		}
	}
}

func TestRewrites(t *testing.T) {
	m, _ := Decode([]byte(`{"jsonrpc":"2.0","id":"r.7","result":{"a":1}}`))
	if got := string(m.WithID(json.RawMessage("7"))); got != `{"jsonrpc":"2.0","id":7,"result":{"a":1}}` {
		t.Errorf("WithID = %s", got)
	}
	if got := string(m.WithResult(nil, json.RawMessage(`{"code":1,"message":"x"}`))); got != `{"jsonrpc":"2.0","id":"r.7","error":{"code":1,"message":"x"}}` {
		t.Errorf("WithResult(error) = %s", got)
	}
	if got := string(m.WithResult(json.RawMessage(`{}`), nil)); got != `{"jsonrpc":"2.0","id":"r.7","result":{}}` {
		t.Errorf("WithResult(result) = %s", got)
	}
	if string(m.ID) != `"r.7"` || string(m.Result) != `{"a":1}` {
		t.Errorf("the rewrites changed the message: %+v", m)
	}
}

func TestResponses(t *testing.T) {
	if got := string(ErrorResponse(nil, -32600, "bad <x>", nil)); got != `{"error":{"code":-32600,"message":"bad \u003cx\u003e"},"id":null,"jsonrpc":"2.0"}` {
		t.Errorf("ErrorResponse = %s", got)
	}
	if got := string(ErrorResponse(json.RawMessage(`"a"`), 1, "m", map[string]string{"uri": "u"})); got != `{"error":{"code":1,"message":"m","data":{"uri":"u"}},"id":"a","jsonrpc":"2.0"}` {
		t.Errorf("ErrorResponse with data = %s", got)
	}
	if got := string(Response(json.RawMessage(`not json`), 1)); got != `{"id":null,"jsonrpc":"2.0","result":1}` {
		t.Errorf("Response of a bad id = %s", got)
	}
	if got := string(Response(json.RawMessage(`3`), func() {})); got != `{"error":{"code":-32603,"message":"the answer could not be encoded: json: unsupported type: func()"},"id":3,"jsonrpc":"2.0"}` {
		t.Errorf("Response of what does not encode = %s", got)
	}
}

// FuzzDecode: Decode never panics, and what it decodes is exactly one of
// a request, a notification or a response, or a request with a null id.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":null,"error":{}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, ok := Decode(b)
		if !ok {
			return
		}
		n := 0
		for _, k := range []bool{m.IsRequest(), m.IsNotification(), m.IsResponse()} {
			if k {
				n++
			}
		}
		if n > 1 || (n == 0 && string(m.ID) != "null") {
			t.Fatalf("%s: request %v notification %v response %v", b, m.IsRequest(), m.IsNotification(), m.IsResponse())
		}
		_ = m.Meta()
		if !json.Valid(m.WithID(json.RawMessage("1"))) {
			t.Fatalf("WithID of %s is not JSON", b)
		}
	})
}
