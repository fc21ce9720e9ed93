package stdiorpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// wait bounds every wait of these tests.
const wait = 5 * time.Second

// server is the other end of a Transport: what the transport writes
// arrives on lines, and say writes to the transport.
type server struct {
	t     *testing.T
	lines chan string
	out   *io.PipeWriter // the transport's input
}

func (s *server) say(format string, args ...any) {
	s.t.Helper()
	if _, err := fmt.Fprintf(s.out, format+"\n", args...); err != nil {
		s.t.Fatalf("write to the transport: %v", err)
	}
}

// next returns the next line the transport wrote.
func (s *server) next() map[string]any {
	s.t.Helper()
	select {
	case line, ok := <-s.lines:
		if !ok {
			s.t.Fatal("the transport closed its output")
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			s.t.Fatalf("the transport wrote %q: %v", line, err)
		}
		return m
	case <-time.After(wait):
		s.t.Fatal("the transport wrote nothing")
	}
	return nil
}

// start returns a started transport and its server; both end with the
// test.
func start(t *testing.T, opts Options) (*Transport, *server) {
	t.Helper()
	inR, inW := io.Pipe()   // server → transport
	outR, outW := io.Pipe() // transport → server
	tr := New(inR, outW, opts)
	srv := &server{t: t, lines: make(chan string, 64), out: inW}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(srv.lines)
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			srv.lines <- sc.Text()
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	if err := tr.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = tr.Close()
		_ = inW.Close()
		_ = outR.Close()
		<-done
		select {
		case <-tr.done:
		case <-time.After(wait):
			t.Error("the read loop did not end")
		}
		_ = inR.Close()
	})
	return tr, srv
}

type answer struct {
	resp *mcptransport.JSONRPCResponse
	err  error
}

func send(ctx context.Context, tr *Transport, id any, method string, params any) <-chan answer {
	ch := make(chan answer, 1)
	go func() {
		resp, err := tr.SendRequest(ctx, mcptransport.JSONRPCRequest{
			JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(id), Method: method, Params: params})
		ch <- answer{resp, err}
	}()
	return ch
}

func await(t *testing.T, ch <-chan answer) answer {
	t.Helper()
	select {
	case a := <-ch:
		return a
	case <-time.After(wait):
		t.Fatal("no answer")
	}
	return answer{}
}

// TestAnswersFindTheirRequests: answers in another order than the
// requests, among garbage, a stray answer and a notification, each reach
// the request they answer, with the result as sent.
func TestAnswersFindTheirRequests(t *testing.T) {
	notes := make(chan mcp.JSONRPCNotification, 4)
	tr, srv := start(t, Options{})
	tr.SetNotificationHandler(func(n mcp.JSONRPCNotification) { notes <- n })

	a := send(t.Context(), tr, "elysia-tools/call-1", "tools/call", json.RawMessage(`{"name":"a"}`))
	first := srv.next()
	b := send(t.Context(), tr, int64(2), "tools/list", nil)
	second := srv.next()
	if first["id"] != "elysia-tools/call-1" || first["method"] != "tools/call" || second["id"] != 2.0 {
		t.Fatalf("the transport wrote %v and %v", first, second)
	}
	if _, ok := second["params"]; ok {
		t.Errorf("nil params were sent: %v", second)
	}
	srv.say(`this is not JSON`)
	srv.say(`{"jsonrpc":"2.0","id":"nobody","result":{}}`)
	srv.say(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}`)
	srv.say(`{"jsonrpc":"2.0","id":2.0,"result":{"tools": [ ]}}`)
	srv.say("{\"jsonrpc\":\"2.0\",\"id\":\"elysia-tools/call-1\",\"result\":{\"content\":[]}}\r")

	if got := await(t, b); got.err != nil || string(got.resp.Result) != `{"tools": [ ]}` || got.resp.ID.String() != "int64:2" {
		t.Errorf("tools/list = %+v, %v", got.resp, got.err)
	}
	if got := await(t, a); got.err != nil || string(got.resp.Result) != `{"content":[]}` || got.resp.ID.String() != "string:elysia-tools/call-1" {
		t.Errorf("tools/call = %+v, %v", got.resp, got.err)
	}
	select {
	case n := <-notes:
		if n.Method != "notifications/progress" || n.Params.AdditionalFields["progress"] != 1.0 {
			t.Errorf("notification = %+v", n)
		}
	case <-time.After(wait):
		t.Fatal("no notification")
	}
}

// TestErrorAnswer: a JSON-RPC error reaches its request as the response's
// Error.
func TestErrorAnswer(t *testing.T) {
	tr, srv := start(t, Options{})
	a := send(t.Context(), tr, "e", "tools/call", nil)
	srv.next()
	srv.say(`{"jsonrpc":"2.0","id":"e","error":{"code":-32602,"message":"bad name","data":{"name":"x"}}}`)
	got := await(t, a)
	if got.err != nil || got.resp.Error == nil || got.resp.Error.Code != -32602 || got.resp.Error.Message != "bad name" || got.resp.Result != nil {
		t.Errorf("answer = %+v, %v", got.resp, got.err)
	}
}

// TestCancelledRequest: a request whose caller gives up returns ctx's
// error, its late answer is dropped, and the next request gets its own.
func TestCancelledRequest(t *testing.T) {
	tr, srv := start(t, Options{})
	ctx, cancel := context.WithCancel(t.Context())
	a := send(ctx, tr, "c1", "tools/call", nil)
	srv.next()
	cancel()
	if got := await(t, a); !errors.Is(got.err, context.Canceled) {
		t.Fatalf("cancelled request = %+v, %v; want context.Canceled", got.resp, got.err)
	}
	srv.say(`{"jsonrpc":"2.0","id":"c1","result":{"late":true}}`)
	for i := range 3 {
		id := fmt.Sprintf("c%d", i+2)
		b := send(t.Context(), tr, id, "tools/call", nil)
		srv.next()
		srv.say(`{"jsonrpc":"2.0","id":%q,"result":{"n":%d}}`, id, i)
		if got := await(t, b); got.err != nil || string(got.resp.Result) != fmt.Sprintf(`{"n":%d}`, i) {
			t.Errorf("request %s = %+v, %v", id, got.resp, got.err)
		}
	}
	if _, err := tr.SendRequest(ctx, mcptransport.JSONRPCRequest{ID: mcp.NewRequestId("c9")}); !errors.Is(err, context.Canceled) {
		t.Errorf("request on a done ctx = %v, want context.Canceled", err)
	}
}

// TestEndOfOutput: when the server's output ends, an answer it sent
// before is delivered, and the requests still waiting fail as closed.
func TestEndOfOutput(t *testing.T) {
	tr, srv := start(t, Options{})
	a := send(t.Context(), tr, "answered", "tools/call", nil)
	srv.next()
	b := send(t.Context(), tr, "orphan", "tools/call", nil)
	srv.next()
	srv.say(`{"jsonrpc":"2.0","id":"answered","result":{}}`)
	_ = srv.out.Close()
	if got := await(t, a); got.err != nil {
		t.Errorf("answered request = %v", got.err)
	}
	if got := await(t, b); !errors.Is(got.err, mcptransport.ErrTransportClosed) {
		t.Errorf("waiting request = %+v, %v; want ErrTransportClosed", got.resp, got.err)
	}
	if _, err := tr.SendRequest(t.Context(), mcptransport.JSONRPCRequest{ID: mcp.NewRequestId("late")}); !errors.Is(err, mcptransport.ErrTransportClosed) {
		t.Errorf("request after the end = %v, want ErrTransportClosed", err)
	}
	if err := tr.SendNotification(t.Context(), mcp.JSONRPCNotification{}); !errors.Is(err, mcptransport.ErrTransportClosed) {
		t.Errorf("notification after the end = %v, want ErrTransportClosed", err)
	}
}

// TestClose: Close fails the requests waiting and closes the server's
// stdin.
func TestClose(t *testing.T) {
	tr, srv := start(t, Options{})
	a := send(t.Context(), tr, "w", "tools/call", nil)
	srv.next()
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if got := await(t, a); !errors.Is(got.err, mcptransport.ErrTransportClosed) {
		t.Errorf("waiting request = %v, want ErrTransportClosed", got.err)
	}
	select {
	case _, ok := <-srv.lines:
		if ok {
			t.Error("the transport wrote after Close")
		}
	case <-time.After(wait):
		t.Error("the server's stdin is still open")
	}
	if err := tr.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
}

// TestWriteToAClosedPipe: a request the server's stdin refuses fails with
// the pipe's error, which the session reads as the session gone.
func TestWriteToAClosedPipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	defer func() { _ = inW.Close(); _ = r.Close() }()
	tr := New(inR, w, Options{})
	if err := tr.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	_ = w.Close()
	_, err = tr.SendRequest(t.Context(), mcptransport.JSONRPCRequest{ID: mcp.NewRequestId("x"), Method: "ping"})
	if !errors.Is(err, os.ErrClosed) || !strings.Contains(err.Error(), "failed to write request") {
		t.Errorf("request to a closed stdin = %v, want os.ErrClosed", err)
	}
	_ = inW.Close()
	<-tr.done
}

// TestServerRequests: the server's requests are served by the handler and
// answered under their id; without a handler they are refused; over the
// cap, one more is refused at once while the others are served.
func TestServerRequests(t *testing.T) {
	t.Run("no handler", func(t *testing.T) {
		_, srv := start(t, Options{})
		srv.say(`{"jsonrpc":"2.0","id":"s1","method":"roots/list"}`)
		got := srv.next()
		if e, _ := got["error"].(map[string]any); got["id"] != "s1" || e["code"] != float64(mcp.METHOD_NOT_FOUND) {
			t.Errorf("answer = %v", got)
		}
	})
	t.Run("served and capped", func(t *testing.T) {
		release := make(chan struct{})
		var served sync.WaitGroup
		tr, srv := start(t, Options{MaxServerRequests: 2})
		tr.SetRequestHandler(func(ctx context.Context, req mcptransport.JSONRPCRequest) (*mcptransport.JSONRPCResponse, error) {
			served.Done()
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if req.Method == "fail" {
				return nil, errors.New("handler failed")
			}
			return mcptransport.NewJSONRPCResultResponse(req.ID, json.RawMessage(`{"roots":[]}`)), nil
		})
		served.Add(2)
		srv.say(`{"jsonrpc":"2.0","id":1,"method":"roots/list"}`)
		srv.say(`{"jsonrpc":"2.0","id":"two","method":"fail"}`)
		served.Wait()
		srv.say(`{"jsonrpc":"2.0","id":3,"method":"roots/list"}`)
		over := srv.next()
		if e, _ := over["error"].(map[string]any); over["id"] != 3.0 || !strings.Contains(fmt.Sprint(e["message"]), "at most 2") {
			t.Errorf("the request over the cap got %v", over)
		}
		close(release)
		got := map[any]map[string]any{}
		for range 2 {
			m := srv.next()
			got[m["id"]] = m
		}
		if r, _ := got[1.0]["result"].(map[string]any); r == nil {
			t.Errorf("roots/list answer = %v", got[1.0])
		}
		if e, _ := got["two"]["error"].(map[string]any); e["message"] != "handler failed" {
			t.Errorf("failing handler's answer = %v", got["two"])
		}
		served.Add(1)
		srv.say(`{"jsonrpc":"2.0","id":4,"method":"roots/list"}`)
		if m := srv.next(); m["id"] != 4.0 || m["result"] == nil {
			t.Errorf("a request after the others ended = %v", m)
		}
	})
}

// TestAnswerToAClosedStdin: an answer that meets the stdin its owner
// closed is logged at debug level, not as an error.
func TestAnswerToAClosedStdin(t *testing.T) {
	var logs bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &mu}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close() }()
	inR, inW := io.Pipe()
	tr := New(inR, w, Options{Logger: logger})
	answered := make(chan struct{})
	tr.SetRequestHandler(func(context.Context, mcptransport.JSONRPCRequest) (*mcptransport.JSONRPCResponse, error) {
		_ = tr.Close()
		defer close(answered)
		return mcptransport.NewJSONRPCResultResponse(mcp.NewRequestId(1), json.RawMessage(`{}`)), nil
	})
	if err := tr.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"roots/list"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	<-answered
	_ = inW.Close()
	<-tr.done
	deadline := time.Now().Add(wait)
	for {
		mu.Lock()
		out := logs.String()
		mu.Unlock()
		if strings.Contains(out, "writing an answer to the server failed") {
			if !strings.Contains(out, "level=DEBUG") || strings.Contains(out, "level=ERROR") {
				t.Errorf("logs = %s, want the failed answer at debug level", out)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no log of the failed answer: %s", out)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestLongLines: a line longer than the read buffer arrives whole, and
// the next line after it too; the sniffer sees each line once, without
// its line end.
func TestLongLines(t *testing.T) {
	var seen []int
	tr, srv := start(t, Options{Line: func(b []byte) { seen = append(seen, len(b)) }})
	big := strings.Repeat("x", 100_000)
	a := send(t.Context(), tr, "big", "tools/call", nil)
	srv.next()
	bigLine := fmt.Sprintf(`{"jsonrpc":"2.0","id":"big","result":{"text":%q}}`, big)
	srv.say("%s", bigLine)
	b := send(t.Context(), tr, "small", "tools/call", nil)
	srv.next()
	srv.say(`{"jsonrpc":"2.0","id":"small","result":{}}`)
	if got := await(t, a); got.err != nil || len(got.resp.Result) != len(big)+11 {
		t.Fatalf("big answer: %v, %d bytes", got.err, len(got.resp.Result))
	}
	if got := await(t, b); got.err != nil || string(got.resp.Result) != "{}" {
		t.Fatalf("small answer: %+v, %v", got.resp, got.err)
	}
	if len(seen) != 2 || seen[0] != len(bigLine) || seen[1] != 42 {
		t.Errorf("the sniffer saw lines of %v bytes", seen)
	}
}

// TestRequestLines: a request is one line of JSON as json.Marshal writes
// it, whatever its params; params that are not JSON are refused before
// anything is written.
func TestRequestLines(t *testing.T) {
	for _, tc := range []struct {
		name   string
		id     any
		params any
		want   string
	}{
		{"raw", "r<1>", json.RawMessage(`{"a": 1}`), `{"jsonrpc":"2.0","id":"r\u003c1\u003e","method":"m","params":{"a": 1}}`},
		{"raw with newlines", int64(7), json.RawMessage("{\n \"a\": [1,\n 2]\n}"), `{"jsonrpc":"2.0","id":7,"method":"m","params":{"a":[1,2]}}`},
		{"struct", 1.5, mcp.CallToolParams{Name: "t", Arguments: map[string]any{"q": "x"}}, `{"jsonrpc":"2.0","id":1.5,"method":"m","params":{"name":"t","arguments":{"q":"x"}}}`},
		{"nil raw", "n", json.RawMessage(nil), `{"jsonrpc":"2.0","id":"n","method":"m","params":null}`},
		{"none", "z", nil, `{"jsonrpc":"2.0","id":"z","method":"m"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := mcptransport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(tc.id), Method: "m", Params: tc.params}
			got, err := appendRequest(nil, req)
			if err != nil || string(got) != tc.want+"\n" {
				t.Errorf("line = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	tr, srv := start(t, Options{})
	_, err := tr.SendRequest(t.Context(), mcptransport.JSONRPCRequest{ID: mcp.NewRequestId("bad"), Method: "m", Params: json.RawMessage(`{"a":`)})
	if err == nil || !strings.Contains(err.Error(), "failed to marshal request") {
		t.Errorf("invalid params = %v", err)
	}
	// Nothing was written: the next line is the next request's.
	a := send(t.Context(), tr, "ok", "m", nil)
	if m := srv.next(); m["id"] != "ok" {
		t.Errorf("the line after a refused request is %v", m)
	}
	srv.say(`{"jsonrpc":"2.0","id":"ok","result":{}}`)
	await(t, a)
}

// TestSameIDTwice: a request given up while another waits under the same
// id leaves that wait in place, and its channel is not reused for a later
// request, which gets its own answer.
func TestSameIDTwice(t *testing.T) {
	tr, srv := start(t, Options{})
	ctx, cancel := context.WithCancel(t.Context())
	a := send(ctx, tr, "dup", "tools/call", nil)
	srv.next()
	var aCh chan *mcptransport.JSONRPCResponse
	tr.mu.Lock()
	aCh = tr.pending["string:dup"]
	tr.mu.Unlock()
	b := send(t.Context(), tr, "dup", "tools/call", nil)
	srv.next()
	cancel()
	if got := await(t, a); !errors.Is(got.err, context.Canceled) {
		t.Fatalf("the cancelled request = %v", got.err)
	}
	tr.mu.Lock()
	_, waiting := tr.pending["string:dup"]
	tr.mu.Unlock()
	if !waiting {
		t.Fatal("the other request under the same id no longer waits")
	}
	for range 20 { // the pool would hand A's channel out again
		if ch := replies.Get().(chan *mcptransport.JSONRPCResponse); ch == aCh {
			t.Fatal("the cancelled request's channel went back to the pool while another used its id")
		}
	}
	srv.say(`{"jsonrpc":"2.0","id":"dup","result":{"for":"b"}}`)
	if got := await(t, b); got.err != nil || string(got.resp.Result) != `{"for":"b"}` {
		t.Errorf("the request still waiting = %+v, %v", got.resp, got.err)
	}
}
