package session

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/internal/testenv"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// TestHistoryKeepsRequestsAndNotifications runs a real todo server over
// stdio: the Conn's history has the tools/list and the tools/call it sent,
// each with its answer, when and how long, its sizes and whose call it
// was; a secret of the server's in a message or an answer is masked; a
// long answer is kept cut, with its size in full; and a notification the
// server sends is kept, masked, in the notifications.
func TestHistoryKeepsRequestsAndNotifications(t *testing.T) {
	t.Parallel()
	const secret = "tok-HISTORY-0123456789"
	cfg := mcpconfig.ServerConfig{Name: "todo", Transport: mcpconfig.TransportStdio, Command: testenv.TodoMCP(t), Args: []string{"--fault-tools"},
		Enabled: true, Env: map[string]string{"TODO_DB": t.TempDir() + "/todo.db"}, Secrets: []string{secret},
		ConnectTimeout: 15 * time.Second, CallTimeout: 10 * time.Second}
	c := New(cfg, Options{CloseGrace: time.Second, CrashLoopDeaths: 5, CrashLoopWindow: time.Minute, CrashBackoff: time.Minute},
		slog.New(slog.DiscardHandler), cfg.Masker())
	t.Cleanup(c.Close)
	ctx := t.Context()
	s, err := c.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	if _, err := c.ListTools(ctx, s); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CallTool(ctx, s, Call{Tool: "create_todo", Inputs: map[string]any{"title": "call " + secret}, User: "alice"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CallTool(ctx, s, Call{Tool: "fault", Inputs: map[string]any{"mode": "big", "size": 100000}, User: "bob"}); err != nil {
		t.Fatal(err)
	}
	n := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION}
	n.Method = "notifications/tools/list_changed"
	n.Params.AdditionalFields = map[string]any{"note": secret}
	c.notified(s, n)

	hist := c.History()
	methods := make([]string, len(hist))
	for i, e := range hist {
		methods[i] = e.Method
		if strings.Contains(e.Message+e.Answer+e.Error, secret) {
			t.Errorf("%s %s keeps the secret: %s / %s", e.Method, e.ID, e.Message, e.Answer)
		}
	}
	if !slices.Contains(methods, "initialize") {
		t.Errorf("history %v has no initialize", methods)
	}
	at := slices.Index(methods, "tools/list")
	if at < 0 || len(hist) < at+3 || methods[at+1] != "tools/call" || methods[at+2] != "tools/call" {
		t.Fatalf("history %v; want tools/list then two tools/calls", methods)
	}
	list, create, big := hist[at], hist[at+1], hist[at+2]
	if list.Time.Before(before) || list.Duration <= 0 || list.ID == "" || list.AnswerBytes < 100 || !strings.Contains(list.Answer, `"create_todo"`) || list.User != "" || list.Error != "" {
		t.Errorf("tools/list entry: %+v", list)
	}
	if create.User != "alice" || create.Duration <= 0 || create.Bytes != len(create.Message)-len("***")+len(secret) || !strings.Contains(create.Message, `"call ***"`) ||
		!strings.Contains(create.Answer, "call ***") || create.Time.Before(list.Time) {
		t.Errorf("create_todo entry: %+v", create)
	}
	if big.User != "bob" || big.AnswerBytes < 100000 || len(big.Answer) > MaxHistoryText+len("...") || !strings.HasSuffix(big.Answer, "...") {
		t.Errorf("the big answer: %d bytes kept of %d, user %q; want it cut to %d, its size in full", len(big.Answer), big.AnswerBytes, big.User, MaxHistoryText)
	}
	notes := c.Notifications()
	if len(notes) != 1 || notes[0].Method != n.Method || notes[0].Message != `{"note":"***"}` || notes[0].Bytes != len(`{"note":"`+secret+`"}`) {
		t.Errorf("notifications: %+v; want the list_changed, masked", notes)
	}
}

// TestHistoryIsBounded: the history keeps the last HistoryLen requests,
// and a request that failed keeps why.
func TestHistoryIsBounded(t *testing.T) {
	t.Parallel()
	h := newHistory("", func(s string) string { return s })
	for i := range HistoryLen + 7 {
		req := mcptransportRequest(i)
		_, _ = h.send(t.Context(), req, failSend)
	}
	var got []HistoryEntry
	for _, k := range h.requests.Last(HistoryLen + 7) {
		got = append(got, h.entry(k))
	}
	if len(got) != HistoryLen || got[0].ID != "7" || got[len(got)-1].Error != "refused" || got[0].Answer != "" {
		t.Errorf("kept %d, first id %q, last error %q; want the last %d, each failed", len(got), got[0].ID, got[len(got)-1].Error, HistoryLen)
	}
}

func mcptransportRequest(i int) mcptransport.JSONRPCRequest {
	return mcptransport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(int64(i)), Method: "ping"}
}

func failSend(context.Context, mcptransport.JSONRPCRequest) (*mcptransport.JSONRPCResponse, error) {
	return nil, errors.New("refused")
}

// TestHistoryMasksWhenRead: a short message is kept as it came and masked
// only when the history is read, a long one when it is kept; either way
// no secret is ever shown, not even one that straddles where a long answer
// is cut, and the sizes are the messages' own.
func TestHistoryMasksWhenRead(t *testing.T) {
	t.Parallel()
	const secret = "tok-READ-0123456789abcdef"
	mask := mcpconfig.ServerConfig{Name: "s", Secrets: []string{secret}}.Masker()
	var masked atomic.Int64
	h := newHistory("", func(s string) string { masked.Add(1); return mask(s) })
	call := func(result string, err error, rpcErr *mcp.JSONRPCErrorDetails) {
		req := mcptransport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId("r-" + secret), Method: "tools/call",
			Params: mcp.CallToolParams{Name: "create_todo", Arguments: map[string]any{"title": "a " + secret + " <b>"}}}
		_, _ = h.send(t.Context(), req, func(context.Context, mcptransport.JSONRPCRequest) (*mcptransport.JSONRPCResponse, error) {
			if err != nil {
				return nil, err
			}
			return &mcptransport.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: req.ID, Result: json.RawMessage(result), Error: rpcErr}, nil
		})
	}
	small := `{"content":[{"type":"text","text":"made ` + secret + `"}]}`
	call(small, nil, nil)
	call("", errors.New("refused by "+secret), nil)
	call("", nil, &mcp.JSONRPCErrorDetails{Code: -32000, Message: "bad " + secret})
	if n := masked.Load(); n != 0 {
		t.Errorf("three short requests were masked %d times when kept; want none until read", n)
	}
	// A long answer: a secret at its start, one across MaxHistoryText.
	long := `{"text":"` + secret + strings.Repeat("x", MaxHistoryText-len(secret)-12) + secret + strings.Repeat("y", 2*MaxHistoryText) + `"}`
	call(long, nil, nil)

	got := (&Conn{history: h}).History()
	if len(got) != 4 {
		t.Fatalf("%d entries, want 4", len(got))
	}
	for _, e := range got {
		if all := e.ID + e.Message + e.Answer + e.Error; strings.Contains(all, secret[:8]) {
			t.Errorf("an entry shows the secret: %+v", e)
		}
		if e.ID != "r-***" || !strings.Contains(e.Message, `"title":"a *** \u003cb\u003e"`) {
			t.Errorf("id %q, message %q; want them masked", e.ID, e.Message)
		}
		if e.Bytes != len(e.Message)-len("***")+len(secret) {
			t.Errorf("bytes %d for the message %s", e.Bytes, e.Message)
		}
	}
	if e := got[0]; e.Answer != strings.ReplaceAll(small, secret, "***") || e.AnswerBytes != len(small) || e.Error != "" {
		t.Errorf("the short answer: %+v", e)
	}
	if e := got[1]; e.Error != "refused by ***" || e.Answer != "" {
		t.Errorf("the failed request: %+v", e)
	}
	if e := got[2]; e.Error != "bad ***" || !strings.Contains(e.Answer, `"message":"bad ***"`) {
		t.Errorf("the JSON-RPC error: %+v", e)
	}
	if e := got[3]; e.AnswerBytes != len(long) || !strings.HasSuffix(e.Answer, "...") || len(e.Answer) > MaxHistoryText+len("...") ||
		strings.Count(e.Answer, "***") != 2 {
		t.Errorf("the long answer, %d bytes: %d kept, %d masks; want it cut after both secrets masked", e.AnswerBytes, len(e.Answer), strings.Count(e.Answer, "***"))
	}
}

// BenchmarkHistorySendCall measures what keeping a request costs on top of
// sending it for a call like BenchmarkAPIExecute's (cmd/elysia): a
// tools/call with mcp-go's params and a short answer, with a server's two
// secrets.
func BenchmarkHistorySendCall(b *testing.B) {
	cfg := mcpconfig.ServerConfig{Name: "s", Secrets: []string{"tok-0123456789abcdef", "another-secret-value"}}
	h := newHistory("", cfg.Masker())
	result := []byte(`{"content":[{"type":"text","text":"{\"todos\":[],\"total\":0}"}],"structuredContent":{"todos":[],"total":0}}`)
	req := mcptransport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(int64(1)), Method: "tools/call",
		Params: mcp.CallToolParams{Name: "list_todos", Arguments: map[string]any{"status": "active"}}}
	answer := func(context.Context, mcptransport.JSONRPCRequest) (*mcptransport.JSONRPCResponse, error) {
		return &mcptransport.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: req.ID, Result: result}, nil
	}
	b.ReportAllocs()
	for b.Loop() {
		_, _ = h.send(b.Context(), req, answer)
	}
}

// BenchmarkHistorySend measures what keeping a request costs on top of
// sending it: a tools/call with small arguments and a 64 KiB answer,
// masked with a server's two secrets.
func BenchmarkHistorySend(b *testing.B) {
	cfg := mcpconfig.ServerConfig{Name: "s", Secrets: []string{"tok-0123456789abcdef", "another-secret-value"}}
	h := newHistory("", cfg.Masker())
	result := []byte(`{"content":[{"type":"text","text":"` + strings.Repeat("x", 64<<10) + `"}]}`)
	req := mcptransport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(int64(1)), Method: "tools/call",
		Params: map[string]any{"name": "create_todo", "arguments": map[string]any{"title": "buy milk"}}}
	answer := func(context.Context, mcptransport.JSONRPCRequest) (*mcptransport.JSONRPCResponse, error) {
		return &mcptransport.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: req.ID, Result: result}, nil
	}
	b.ReportAllocs()
	for b.Loop() {
		_, _ = h.send(b.Context(), req, answer)
	}
}

// TestHistoryKeepsServerRequests: a question the server asks during a call
// (elicitation/create, on the 2025-11-25 protocol) is kept as the server's
// request with the answer the gateway gave, as the question of the user
// whose call it came during.
func TestHistoryKeepsServerRequests(t *testing.T) {
	t.Parallel()
	cfg := mcpconfig.ServerConfig{Name: "conf", Transport: mcpconfig.TransportStdio, Command: testenv.ConformanceServer(t), Enabled: true,
		ProtocolVersion: mcp.LATEST_LEGACY_PROTOCOL_VERSION, ConnectTimeout: 15 * time.Second, CallTimeout: 10 * time.Second}
	c := New(cfg, Options{CloseGrace: time.Second, CrashLoopDeaths: 5, CrashLoopWindow: time.Minute, CrashBackoff: time.Minute},
		slog.New(slog.DiscardHandler), cfg.Masker())
	t.Cleanup(c.Close)
	s, err := c.Session(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CallTool(t.Context(), s, Call{Tool: "test_elicitation", Inputs: map[string]any{"message": "Your name?"}, User: "alice"}); err != nil {
		t.Fatal(err)
	}
	var asked *HistoryEntry
	for _, e := range c.History() {
		if e.Method == "elicitation/create" {
			asked = &e
		}
	}
	if asked == nil || !asked.FromServer || !strings.Contains(asked.Message, "Your name?") || !strings.Contains(asked.Answer, "decline") || asked.Duration <= 0 {
		t.Errorf("the server's question in the history: %+v; want it from the server, with the gateway's decline", asked)
	}
	if asked != nil && asked.User != "alice" {
		t.Errorf("the server's question belongs to %q; want alice, whose call it came during", asked.User)
	}
}

// TestMarshalParamsSendsTheSameBytes: the params the history marshals once
// go to the transport in their place, and the request it writes is byte
// for byte the one it wrote from the params themselves; nil params stay
// out of the request.
func TestMarshalParamsSendsTheSameBytes(t *testing.T) {
	call := mcp.CallToolParams{Name: "add", Arguments: map[string]any{"title": "<b>&</b>", "n": 3},
		Meta: &mcp.Meta{ProgressToken: "elysia-1", AdditionalFields: map[string]any{"traceparent": "00-1-2-01"}}}
	raw := json.RawMessage(`{"uri":"file:///a"}`)
	for _, params := range []any{call, &call, map[string]any{"cursor": "x"}, raw, nil, (*mcp.CallToolParams)(nil)} {
		req := mcptransport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(int64(7)), Method: "tools/call", Params: params}
		want, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		sent, wire := marshalParams(params)
		req.Params = wire
		got, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("params %T: the transport writes\n%s\nwant\n%s", params, got, want)
		}
		if params == nil || isNilPointer(params) {
			if sent != nil {
				t.Errorf("params %T: kept %s, want nothing (they are left out)", params, sent)
			}
			continue
		}
		if p, _ := marshalValue(params); string(sent) != string(p) {
			t.Errorf("params %T: kept %s, want %s", params, sent, p)
		}
	}
	sent, _ := marshalParams(raw)
	raw[2] = 'X' // the caller's buffer: the history's copy does not change
	if string(sent) != `{"uri":"file:///a"}` {
		t.Errorf("the history kept %s after the caller wrote to its params", sent)
	}
}
