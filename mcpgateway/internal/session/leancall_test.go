package session

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// callResults are tools/call results, well formed or not, that
// parseCallResult must take as mcp.ParseCallToolResult does.
var callResults = []string{
	`{"content":[{"type":"text","text":"No todos found."}],"structuredContent":{"todos":[],"count":0}}`,
	`{"content":[],"isError":true}`,
	`{"content":null}`,
	`{"content":[{"type":"text","text":"a","annotations":{"audience":["user"],"priority":0.5},"_meta":{"k":"v"}}],"_meta":{"progressToken":"t","x":1}}`,
	`{"content":[{"type":"image","data":"aGk=","mimeType":"image/png"},{"type":"audio","data":"aGk=","mimeType":"audio/wav"}]}`,
	`{"content":[{"type":"resource_link","uri":"file:///a","name":"a","mimeType":"text/plain"}]}`,
	`{"content":[{"type":"resource","resource":{"uri":"file:///a","text":"body","mimeType":"text/plain"}}]}`,
	`{"content":[{"type":"resource","resource":{"uri":"file:///a","blob":"aGk="}}]}`,
	`{"content":[{"type":"text","text":"x"}],"structuredContent":null}`,
	`{"content":[{"type":"text","text":"x"}],"structuredContent":[1,2]}`,
	`{"content":[{"type":"text","text":"x"}],"isError":false,"extra":{"deep":[1,{"a":null}]}}`,
	`{"content":[{"type":"text","text":"a\"b\u00e9"},{"text":null,"type":"text","x":1}],"isError":null,"structuredContent":{"a":[1]}}`,
	`{"Content":[{"type":"text","text":"x"}],"ISERROR":true}`,
	`{"content":[{"type":"text","text":"x"}],"content":[]}`,
	`{"content":[{"TYPE":"text","Text":"x"}]}`,
	`{"content":[{"type":"te\u0078t","text":"x"}]}`,
	`{"content":[{"type":"text","text":"\ud800"}], "re\u0073ultType":"complete"}`,
	"{\"content\":[{\"type\":\"text\",\"text\":\"\xff\"}]}",
	// Refused by both.
	`{}`,
	`{"isError":true}`,
	`[]`,
	`null`,
	`{"content":"text"}`,
	`{"content":[{"text":"no type"}]}`,
	`{"content":[{"type":5,"text":"x"}]}`,
	`{"content":[{"type":"text","text":5}]}`,
	`{"content":[{"type":"video","uri":"x"}]}`,
	`{"content":[1]}`,
	`{"content":[{"type":"text","text":"x"}],"isError":"yes"}`,
	`{"content":[{"type":"text","text":"x"}`,
	`{"content":[{"type":"text","text":"x"}]} trailing`,
}

// sameParse reports how parseCallResult and mcp-go's parser differ on raw,
// or "" when they agree: both refuse it, or both take it to the same
// result, but for what parseCallResult leaves out by design (the
// structured content decoded into maps) and what it refuses by design (a
// result asking for more input).
func sameParse(raw []byte) string {
	msg := json.RawMessage(raw)
	want, wantErr := mcp.ParseCallToolResult(&msg)
	got, gotErr := parseCallResult(raw)
	if wantErr == nil && want.ResultType == mcp.ResultTypeInputRequired {
		if gotErr == nil {
			return "took a result asking for input"
		}
		return ""
	}
	switch {
	case (wantErr == nil) != (gotErr == nil):
		return "mcp-go: " + errText(wantErr) + "; lean: " + errText(gotErr)
	case wantErr != nil:
		return ""
	}
	want.StructuredContent = nil
	if len(want.RawStructuredContent) == 0 {
		want.RawStructuredContent = nil
	}
	if !reflect.DeepEqual(got, want) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		return "lean " + string(g) + ", mcp-go " + string(w)
	}
	return ""
}

func errText(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

func TestParseCallResultAgreesWithMCPGo(t *testing.T) {
	for _, raw := range callResults {
		if d := sameParse([]byte(raw)); d != "" {
			t.Errorf("%s: %s", raw, d)
		}
	}
}

func TestParseCallResultKeepsStructuredBytes(t *testing.T) {
	res, err := parseCallResult(json.RawMessage(`{"content":[],"structuredContent":{"b":1, "a":[2]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if string(res.RawStructuredContent) != `{"b":1, "a":[2]}` || res.StructuredContent != nil {
		t.Errorf("structured = %s, %v; want the bytes as sent, and no maps", res.RawStructuredContent, res.StructuredContent)
	}
	if _, err := parseCallResult(json.RawMessage(`{"content":[]}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := parseCallResult(nil); err == nil {
		t.Error("a nil result was taken")
	}
}

func TestParseCallResultRefusesInputRequired(t *testing.T) {
	_, err := parseCallResult(json.RawMessage(`{"resultType":"input_required","inputRequests":{"a":{"method":"elicitation/create","params":{}}}}`))
	if err == nil || !strings.Contains(err.Error(), "asked for more input") {
		t.Errorf("err = %v; want the server asked for more input", err)
	}
}

func FuzzParseCallResult(f *testing.F) {
	for _, raw := range callResults {
		f.Add([]byte(raw))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if d := sameParse(raw); d != "" {
			t.Errorf("%q: %s", raw, d)
		}
		if fast, ok := parseTextResult(raw); ok {
			slow, err := decodeCallResult(raw)
			if err != nil || !reflect.DeepEqual(fast, slow) {
				t.Errorf("%q: the one-pass parse took %+v, encoding/json %+v, %v", raw, fast, slow, err)
			}
		}
	})
}

// silentTransport answers a request with neither a response nor an error.
type silentTransport struct{ mcptransport.Interface }

func (silentTransport) SendRequest(context.Context, mcptransport.JSONRPCRequest) (*mcptransport.JSONRPCResponse, error) {
	return nil, nil //nolint:nilnil // the case under test
}

// TestCallToolWithoutAResponse: a transport that answers nothing is an
// error of the call, not a crash.
func TestCallToolWithoutAResponse(t *testing.T) {
	s := &Session{client: mcpclient.NewClient(silentTransport{})}
	_, err := (&Conn{}).callTool(t.Context(), s, mcp.CallToolParams{Name: "x"}, nil)
	if err == nil || !strings.Contains(err.Error(), "no response") {
		t.Fatalf("err = %v; want no response", err)
	}
}

// BenchmarkParseCallResult: the result todo-mcp sends for list_todos, by
// the one-pass parse and by encoding/json.
func BenchmarkParseCallResult(b *testing.B) {
	raw := []byte(`{"content":[{"type":"text","text":"No todos found."}],"structuredContent":{"todos":[],"count":0}}`)
	for name, parse := range map[string]func(json.RawMessage) (*mcp.CallToolResult, error){
		"one-pass": parseCallResult, "encoding-json": decodeCallResult} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := parse(raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
