package stdiorpc

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// delivery is what becomes of a line: a notification, a server request,
// or a response to the request with key; nothing, else.
type delivery struct {
	kind   kind
	note   mcp.JSONRPCNotification
	req    mcptransport.JSONRPCRequest
	key    string
	result json.RawMessage
	errd   *mcp.JSONRPCErrorDetails
}

// mcpgoDelivery is what mcp-go v1.2.1's stdio transport makes of a line
// (Stdio.readResponses), written out here as the reference decode.
func mcpgoDelivery(line []byte) delivery {
	var base struct {
		JSONRPC string         `json:"jsonrpc"`
		ID      *mcp.RequestId `json:"id,omitempty"`
		Method  string         `json:"method,omitempty"`
	}
	if json.Unmarshal(line, &base) != nil {
		return delivery{}
	}
	if base.Method != "" && base.ID == nil {
		var note mcp.JSONRPCNotification
		if json.Unmarshal(line, &note) != nil {
			return delivery{}
		}
		return delivery{kind: kindNotification, note: note}
	}
	if base.Method != "" && base.ID != nil {
		var req mcptransport.JSONRPCRequest
		if json.Unmarshal(line, &req) == nil {
			return delivery{kind: kindRequest, req: req}
		}
	}
	var resp mcptransport.JSONRPCResponse
	if json.Unmarshal(line, &resp) != nil {
		return delivery{}
	}
	return delivery{kind: kindResponse, key: resp.ID.String(), result: resp.Result, errd: resp.Error}
}

// ourDelivery is what decode makes of a line.
func ourDelivery(line []byte) delivery {
	m := decode(line)
	d := delivery{kind: m.kind, note: m.note, req: m.req}
	if m.kind == kindResponse {
		d.key = string(responseKey(nil, m.env.id))
		d.result, d.errd = m.env.result, m.errd
		if m.env.id != nil && requestID(m.env.id).String() != d.key {
			d.key = "requestID disagrees: " + requestID(m.env.id).String()
		}
	}
	return d
}

// undelivered tells a response no request can wait for (it has no id) from
// one that may be delivered: mcp-go reads a top-level null as such a
// response, classify drops it.
func undelivered(d delivery) bool {
	return d.kind == kindDrop || d.kind == kindResponse && d.key == "<nil>"
}

var envelopeSeeds = []string{
	`{"jsonrpc":"2.0","id":"elysia-tools/call-1","result":{"content":[{"type":"text","text":"ok"}]}}`,
	`{"jsonrpc":"2.0","id":7,"result":{}}`,
	`{"jsonrpc":"2.0","id":7.0,"result":{}}`,
	`{"jsonrpc":"2.0","id":7.5,"result":null}`,
	`{"jsonrpc":"2.0","id":1e400,"result":{}}`,
	`{"jsonrpc":"2.0","id":-3,"error":{"code":-32601,"message":"no such method","data":{"x":1}}}`,
	`{"jsonrpc":"2.0","id":"a\"b\u0063","result":[1,"}",{"a":"]"}]}`,
	`{"jsonrpc":"2.0","id":"x","error":{"code":1.5,"message":"m"}}`,
	`{"jsonrpc":"2.0","id":"x","error":"boom"}`,
	`{"jsonrpc":"2.0","id":"x","error":{"code":1,"message":"a","data":5},"error":{"code":2}}`,
	`{"jsonrpc":"2.0","id":"x","error":"bad","error":{"code":2,"message":"b"}}`,
	`{"jsonrpc":"2.0","id":"x","error":{"code":2,"message":"b"},"error":null}`,
	`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}`,
	`{"jsonrpc":"2.0","method":"notifications/message","params":"nope"}`,
	`{"jsonrpc":"2.0","id":"s1","method":"roots/list"}`,
	`{"jsonrpc":"2.0","id":null,"method":"notifications/initialized"}`,
	`{"jsonrpc":"2.0","id":"s1","method":""}`,
	`{"jsonrpc":"2.0","id":"s1","method":null,"result":{}}`,
	`{"jsonrpc":"2.0","id":"s1","method":"ping","method":null}`,
	`{"jsonrpc":"2.0","id":true,"result":{}}`,
	`{"jsonrpc":2,"id":"s1","result":{}}`,
	`{"jsonrpc":"2.0","method":5}`,
	`{"JSONRPC":"2.0","ID":"up","Result":{"a":1}}`,
	`{"jsonrpc":"2.0","\u0069d":"esc","re\u0073ult":1}`,
	"{\"jsonrpc\":\"2.0\",\"\u212a\":1,\"id\":\"kelvin\",\"re\u017fult\":2}",
	`{"jsonrpc":"2.0","id":"a","id":"b","result":1,"result":2}`,
	`{"jsonrpc":"2.0","id":"a","id":null,"result":1}`,
	" \t{ \"jsonrpc\" : \"2.0\" , \"id\" : \"sp\" , \"result\" : { } } ",
	"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"result\":1}",
	`null`, `[]`, `"x"`, `5`, `{}`, ``, `{"id":"x"`, `{"id":"x"}}`,
}

func FuzzClassify(f *testing.F) {
	for _, s := range envelopeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		want, got := mcpgoDelivery(line), ourDelivery(line)
		if undelivered(want) && undelivered(got) {
			return
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("line %q:\n got %+v\nwant %+v (mcp-go)", line, got, want)
		}
	})
}

// TestClassifyKinds pins a few lines' fate outright, so the differential
// test cannot pass with both sides dropping everything.
func TestClassifyKinds(t *testing.T) {
	for _, tc := range []struct {
		line string
		kind kind
		key  string
	}{
		{`{"jsonrpc":"2.0","id":"elysia-tools/call-1","result":{"content":[]}}`, kindResponse, "string:elysia-tools/call-1"},
		{`{"jsonrpc":"2.0","id":7.0,"result":{}}`, kindResponse, "int64:7"},
		{`{"JSONRPC":"2.0","ID":"up","Result":{"a":1}}`, kindResponse, "string:up"},
		{`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}`, kindNotification, ""},
		{`{"jsonrpc":"2.0","id":"s1","method":"roots/list"}`, kindRequest, ""},
		{`{"jsonrpc":2,"id":"s1","result":{}}`, kindDrop, ""},
		{`{"jsonrpc":"2.0","id":true,"result":{}}`, kindDrop, ""},
		{`not json`, kindDrop, ""},
	} {
		d := ourDelivery([]byte(tc.line))
		if d.kind != tc.kind || d.key != tc.key {
			t.Errorf("%s: kind %d key %q, want kind %d key %q", tc.line, d.kind, d.key, tc.kind, tc.key)
		}
	}
	d := ourDelivery([]byte(`{"jsonrpc":"2.0","id":"x","error":{"code":1,"message":"a","data":5},"error":{"code":2}}`))
	if d.errd == nil || d.errd.Code != 2 || d.errd.Message != "a" {
		t.Errorf("an error member named twice = %+v, want the second over the first, as encoding/json decodes it", d.errd)
	}
	d = ourDelivery([]byte(`{"jsonrpc":"2.0","id":"r","result":{"a":[1, 2]}}`))
	if !bytes.Equal(d.result, []byte(`{"a":[1, 2]}`)) {
		t.Errorf("result = %s, want it as sent", d.result)
	}
}
