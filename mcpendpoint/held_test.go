package mcpendpoint

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/internal/testenv"
	"github.com/elysia-go/elysia/mcpendpoint/internal/reqstate"
	"github.com/elysia-go/elysia/mcpendpoint/internal/sse"
	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
	"github.com/elysia-go/elysia/tools"
)

// asker is an MCP server (2025-11-25, in this process) whose tools ask
// their client: "two" asks for a name, then a color; "haiku" asks for a
// message (sampling); "echo" asks nothing. runs counts the calls of "two"; ended gets a word when a tool
// ends because its call was cancelled.
type asker struct {
	url   string
	runs  atomic.Int32
	ended chan string
}

func newAsker(t *testing.T) *asker {
	t.Helper()
	a := &asker{ended: make(chan string, 64)}
	s := mcpserver.NewMCPServer("asker", "1", mcpserver.WithElicitation())
	form := map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string"}}}
	elicit := func(ctx context.Context, msg string) (string, error) {
		er := mcp.ElicitationRequest{}
		er.Params.Message, er.Params.RequestedSchema = msg, form
		res, err := mcpserver.ServerFromContext(ctx).RequestElicitation(ctx, er)
		if err != nil {
			if ctx.Err() != nil {
				a.ended <- "cancelled"
			}
			return "", err
		}
		content, _ := res.Content.(map[string]any)
		return fmt.Sprintf("%s:%v", res.Action, content["a"]), nil
	}
	s.AddTool(mcp.NewTool("two", mcp.WithString("who")), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		a.runs.Add(1)
		name, err := elicit(ctx, "name?")
		if err != nil {
			return nil, err
		}
		color, err := elicit(ctx, "color?")
		if err != nil {
			return nil, err
		}
		return mcp.NewToolResultText(fmt.Sprintf("name=%s color=%s", name, color)), nil
	})
	s.AddTool(mcp.NewTool("haiku"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		req := mcp.CreateMessageRequest{}
		req.Messages = []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent("write a haiku")}}
		req.MaxTokens = 50
		//lint:ignore SA1019 the upstream speaks 2025-11-25
		res, err := mcpserver.ServerFromContext(ctx).RequestSampling(ctx, req) //nolint:staticcheck // see above
		if err != nil {
			return nil, err
		}
		tc, _ := res.Content.(mcp.TextContent)
		return mcp.NewToolResultText("sampled: " + tc.Text), nil
	})
	s.AddTool(mcp.NewTool("echo", mcp.WithString("message")), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("echo: " + req.GetString("message", "")), nil
	})
	hs := httptest.NewServer(mcpserver.NewStreamableHTTPServer(s, mcpserver.WithDisableLocalhostProtection(true)))
	t.Cleanup(hs.Close)
	a.url = hs.URL + "/mcp"
	return a
}

// answerOf is what the test clients answer a question: by what it asks.
func answerOf(msg string) string {
	for q, a := range map[string]string{"name": "Ada", "color": "green", "city": "Paris"} {
		if strings.Contains(msg, q) {
			return a
		}
	}
	return "yes"
}

// samplingHandler adapts a func to mcp-go's client.SamplingHandler.
type samplingHandler func(context.Context, mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error)

func (f samplingHandler) CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	return f(ctx, req)
}

// wire records what a client's HTTP requests met: how many POSTs of each
// method, and any session id an answer gave.
type wire struct {
	mu       sync.Mutex
	posts    map[string]int
	sessions []string
}

func (w *wire) RoundTrip(r *http.Request) (*http.Response, error) {
	w.mu.Lock()
	if w.posts == nil {
		w.posts = map[string]int{}
	}
	w.posts[r.Header.Get(mcp.HeaderMethod)]++
	w.mu.Unlock()
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && resp.Header.Get(mcpserver.HeaderKeySessionID) != "" {
		w.mu.Lock()
		w.sessions = append(w.sessions, resp.Header.Get(mcpserver.HeaderKeySessionID))
		w.mu.Unlock()
	}
	return resp, err
}

func (w *wire) count(method string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.posts[method]
}

// modernClient is mcp-go's client with its default options, which
// negotiates 2026-07-28, of the endpoint at base as user; it answers
// questions with answerOf and sampling requests with a message of its own.
func modernClient(t *testing.T, base, user string, opts ...mcpclient.ClientOption) (*mcpclient.Client, *wire) {
	t.Helper()
	w := &wire{}
	tr, err := mcptransport.NewStreamableHTTP(base+"/mcp", mcptransport.WithHTTPHeaders(map[string]string{"X-User": user}),
		mcptransport.WithHTTPBasicClient(&http.Client{Transport: w}))
	if err != nil {
		t.Fatal(err)
	}
	opts = append([]mcpclient.ClientOption{
		mcpclient.WithElicitationHandler(elicitHandler(func(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
			return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept,
				Content: map[string]any{"a": answerOf(req.Params.Message)}}}, nil
		})),
		mcpclient.WithSamplingHandler(samplingHandler(func(_ context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant,
				Content: mcp.NewTextContent(fmt.Sprintf("the client's haiku (%d tokens)", req.MaxTokens))}, Model: "client", StopReason: "endTurn"}, nil
		})),
	}, opts...)
	c := mcpclient.NewClient(tr, opts...)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	res, err := c.Initialize(ctx, mcp.InitializeRequest{})
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if res.ProtocolVersion != mcp.ProtocolVersion20260728 {
		t.Fatalf("the default client negotiated %q, want %q", res.ProtocolVersion, mcp.ProtocolVersion20260728)
	}
	return c, w
}

// callText calls tool and returns its result's text, or the error's.
func callText(ctx context.Context, c *mcpclient.Client, tool string, args map[string]any) (string, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = tool, args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, ct := range res.Content {
		if tc, ok := ct.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	if res.IsError {
		return "", fmt.Errorf("isError: %s", b.String())
	}
	return b.String(), nil
}

// askerEndpoint serves an endpoint over a's server ("up") for the test.
func askerEndpoint(t *testing.T, a *asker, opts *Options) (*Endpoint, string) {
	t.Helper()
	src := &source{expose: mcpconfig.DefaultExpose(), gws: []*mcpgateway.Gateway{gateway(t, "up", a.url)}}
	ep := New(src, opts)
	return ep, serve(t, ep)
}

// TestModernListAndCall: a 2026-07-28 client lists and calls through /mcp
// with no session: none is opened, none recorded for the replicas.
func TestModernListAndCall(t *testing.T) {
	a := newAsker(t)
	store := &memSessions{}
	_, base := askerEndpoint(t, a, &Options{Sessions: store})
	c, w := modernClient(t, base, "alice")
	res, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var got []string
	for _, tl := range res.Tools {
		got = append(got, tl.Name)
	}
	if strings.Join(got, ",") != "up__echo,up__haiku,up__two" {
		t.Errorf("tools/list = %v", got)
	}
	if ttl, ok := res.TTL(); !ok || ttl != DefaultListTTL.Milliseconds() || res.CacheScope != mcp.CacheScopePrivate {
		t.Errorf("tools/list hints: ttlMs %d (%v), cacheScope %q; want %d, private", ttl, ok, res.CacheScope, DefaultListTTL.Milliseconds())
	}
	if text, err := callText(t.Context(), c, "up__echo", map[string]any{"message": "hi"}); err != nil || text != "echo: hi" {
		t.Errorf("up__echo = %q, %v", text, err)
	}
	if len(w.sessions) != 0 {
		t.Errorf("answers gave session ids %q, want none", w.sessions)
	}
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{%q:%q,%q:{}}}}`,
		mcp.MetaKeyProtocolVersion, mcp.ProtocolVersion20260728, mcp.MetaKeyClientCapabilities)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(mcp.HeaderProtocolVersion, mcp.ProtocolVersion20260728)
	req.Header.Set(mcp.HeaderMethod, "server/discover")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var discover struct {
		Result struct {
			SupportedVersions []string `json:"supportedVersions"`
		} `json:"result"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&discover); err != nil || strings.Join(discover.Result.SupportedVersions, ",") != strings.Join(servedVersions, ",") ||
		servedVersions[0] != mcp.ProtocolVersion20260728 || servedVersions[1] != mcp.ProtocolVersion20251125 {
		t.Errorf("server/discover lists %v (%v), want %v", discover.Result.SupportedVersions, err, servedVersions)
	}
	store.mu.Lock()
	defer store.mu.Unlock()
	if len(store.rows) != 0 {
		t.Errorf("%d sessions recorded for the replicas, want none", len(store.rows))
	}
}

// TestModernQuestions: what a call asks a 2026-07-28 client reaches it as
// input_required, and the retry with the answers goes on with the same
// call: an upstream's two questions in turn (two rounds), an upstream's
// sampling request, and the question of ask's run.
func TestModernQuestions(t *testing.T) {
	a := newAsker(t)
	ex := mcpconfig.DefaultExpose()
	ex.Agent = true
	src := &source{expose: ex, gws: []*mcpgateway.Gateway{gateway(t, "up", a.url)}}
	ep := New(src, &Options{Agent: askingAgent{}})
	c, w := modernClient(t, serve(t, ep), "alice")
	for _, tt := range []struct {
		tool  string
		args  map[string]any
		want  string
		posts int // the first tools/call and its retries
	}{
		{"up__two", map[string]any{"who": "me"}, "name=accept:Ada color=accept:green", 3},
		{"up__haiku", nil, "sampled: the client's haiku (50 tokens)", 2},
		{"ask", map[string]any{"question": "where?"}, "alice: accept Paris", 2},
	} {
		before := w.count("tools/call")
		text, err := callText(t.Context(), c, tt.tool, tt.args)
		if err != nil || text != tt.want {
			t.Errorf("%s = %q, %v; want %q", tt.tool, text, err, tt.want)
		}
		if n := w.count("tools/call") - before; n != tt.posts {
			t.Errorf("%s took %d tools/call requests, want %d", tt.tool, n, tt.posts)
		}
	}
	if n := a.runs.Load(); n != 1 {
		t.Errorf("up's two ran %d times, want once: the retries go on with the call", n)
	}
	testenv.WaitFor(t, 5*time.Second, "no call held", func() bool { return heldCount(ep) == 0 })
}

// askingAgent answers ask with what its user says to a question.
type askingAgent struct{}

func (askingAgent) Ask(ctx context.Context, user, _, _ string, emit tools.Emitter) (Answer, error) {
	asker, ok := emit.(tools.Asker)
	if !ok {
		return Answer{}, fmt.Errorf("the emitter cannot ask")
	}
	ans, err := asker.Ask(ctx, tools.Question{Payload: tools.ElicitationPayload{Mode: mcp.ElicitationModeForm, Message: "which city?",
		RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string"}}}}})
	if err != nil {
		return Answer{}, err
	}
	return Answer{Text: fmt.Sprintf("%s: %s %v", user, ans.Action, ans.Content["a"])}, nil
}

func heldCount(ep *Endpoint) int { return ep.held.calls.Len() }

// rawCall posts a 2026-07-28 tools/call of tool to base's /mcp as user,
// with the routing headers its body says (edit changes them), and returns
// the status and the JSON-RPC answer.
func rawCall(t *testing.T, base, user, tool string, params map[string]any, edit func(http.Header)) (int, map[string]any) {
	t.Helper()
	p := map[string]any{"name": tool, "_meta": map[string]any{
		mcp.MetaKeyProtocolVersion:    mcp.ProtocolVersion20260728,
		mcp.MetaKeyClientCapabilities: map[string]any{"elicitation": map[string]any{"form": map[string]any{}}},
		mcp.MetaKeyClientInfo:         map[string]any{"name": "raw", "version": "1"},
	}}
	for k, v := range params {
		p[k] = v
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": p})
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/mcp", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("X-User", user)
	req.Header.Set(mcp.HeaderProtocolVersion, mcp.ProtocolVersion20260728)
	req.Header.Set(mcp.HeaderMethod, "tools/call")
	req.Header.Set(mcp.HeaderName, tool)
	if edit != nil {
		edit(req.Header)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	raw, _ := io.ReadAll(resp.Body)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") { // the last event is the answer
		var last []byte
		for rd := sse.NewReader(bytes.NewReader(raw), len(raw)); ; {
			ev, err := rd.Next()
			if err != nil {
				break
			}
			if len(ev.Data) > 0 {
				last = ev.Data
			}
		}
		raw = last
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("answer %q: %v", raw, err)
	}
	return resp.StatusCode, m
}

// stateOf returns the requestState of an input_required answer.
func stateOf(t *testing.T, m map[string]any) string {
	t.Helper()
	res, _ := m["result"].(map[string]any)
	s, _ := res["requestState"].(string)
	if res["resultType"] != "input_required" || s == "" {
		t.Fatalf("answer %v: want input_required with a requestState", m)
	}
	return s
}

// errorOf returns the JSON-RPC error code and message of an answer.
func errorOf(m map[string]any) (int, string) {
	e, _ := m["error"].(map[string]any)
	code, _ := e["code"].(float64)
	msg, _ := e["message"].(string)
	return int(code), msg
}

// TestModernRequestStateRefused: a retry whose requestState is forged,
// expired, another user's or another request's is refused with 400 and a
// JSON-RPC error saying which, and nothing runs; the call it names still
// takes the good retry.
func TestModernRequestStateRefused(t *testing.T) {
	a := newAsker(t)
	ep, base := askerEndpoint(t, a, nil)
	_, first := rawCall(t, base, "alice", "up__two", map[string]any{"arguments": map[string]any{"who": "me"}}, nil)
	state := stateOf(t, first)
	st, err := ep.sealer.Open(state, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	expired := st
	expired.Expires = time.Now().Add(-time.Minute).Unix()
	dot := strings.IndexByte(state, '.')
	forged := state[:dot-2] + "xx" + state[dot:]
	answers := map[string]any{"elysia-1": map[string]any{"action": "accept", "content": map[string]any{"a": "Ada"}}}
	for _, tt := range []struct {
		name, user, state string
		args              map[string]any
		want              string
	}{
		{"forged", "alice", forged, map[string]any{"who": "me"}, "not one this service issued"},
		{"unsigned", "alice", strings.Split(state, ".")[0], map[string]any{"who": "me"}, "not one this service issued"},
		{"expired", "alice", ep.sealer.Seal(expired), map[string]any{"who": "me"}, "expired"},
		{"another user's", "bob", state, map[string]any{"who": "me"}, "another user"},
		{"another request's", "alice", state, map[string]any{"who": "you"}, "another request"},
	} {
		code, m := rawCall(t, base, tt.user, "up__two", map[string]any{"arguments": tt.args, "requestState": tt.state, "inputResponses": answers}, nil)
		rpc, msg := errorOf(m)
		if code != http.StatusBadRequest || rpc != mcp.INVALID_REQUEST || !strings.Contains(msg, "requestState refused") || !strings.Contains(msg, tt.want) {
			t.Errorf("%s: %d %v; want 400, %d, requestState refused: %s", tt.name, code, m, mcp.INVALID_REQUEST, tt.want)
		}
	}
	if n := a.runs.Load(); n != 1 {
		t.Errorf("up's two ran %d times, want once", n)
	}
	_, m := rawCall(t, base, "alice", "up__two", map[string]any{"arguments": map[string]any{"who": "me"}, "requestState": state, "inputResponses": answers}, nil)
	if res, _ := m["result"].(map[string]any); res["resultType"] != "input_required" {
		t.Errorf("the good retry: %v, want the call's next question", m)
	}
}

// TestModernHeadersCheckedAgainstBody: a 2026-07-28 request whose routing
// headers contradict its body, or miss, gets 400 and nothing runs, on the
// fast list path as through mcp-go.
func TestModernHeadersCheckedAgainstBody(t *testing.T) {
	a := newAsker(t)
	_, base := askerEndpoint(t, a, nil)
	args := map[string]any{"arguments": map[string]any{"who": "me"}}
	for _, tt := range []struct {
		name string
		edit func(http.Header)
	}{
		{"Mcp-Name of another tool", func(h http.Header) { h.Set(mcp.HeaderName, "up__echo") }},
		{"no Mcp-Name", func(h http.Header) { h.Del(mcp.HeaderName) }},
		{"Mcp-Method of another method", func(h http.Header) { h.Set(mcp.HeaderMethod, "tools/list") }},
		{"no Mcp-Method", func(h http.Header) { h.Del(mcp.HeaderMethod) }},
		{"MCP-Protocol-Version of another version", func(h http.Header) { h.Set(mcp.HeaderProtocolVersion, "2099-01-01") }},
	} {
		code, m := rawCall(t, base, "alice", "up__two", args, tt.edit)
		if rpc, _ := errorOf(m); code != http.StatusBadRequest || rpc == 0 {
			t.Errorf("%s: %d %v, want 400 with a JSON-RPC error", tt.name, code, m)
		}
	}
	if n := a.runs.Load(); n != 0 {
		t.Errorf("up's two ran %d times, want never", n)
	}
	list := func(method string) int {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{%q:%q,%q:{}}}}`,
			mcp.MetaKeyProtocolVersion, mcp.ProtocolVersion20260728, mcp.MetaKeyClientCapabilities)
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set(mcp.HeaderProtocolVersion, mcp.ProtocolVersion20260728)
		req.Header.Set(mcp.HeaderMethod, method)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	for _, method := range []string{http.MethodGet, http.MethodDelete} { // no session to listen on or end
		req, _ := http.NewRequestWithContext(t.Context(), method, base+"/mcp", nil)
		req.Header.Set(mcp.HeaderProtocolVersion, mcp.ProtocolVersion20260728)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s /mcp at 2026-07-28: %d, want 405", method, resp.StatusCode)
		}
	}
	if code := list("tools/list"); code != http.StatusOK {
		t.Errorf("tools/list with its headers: %d, want 200", code)
	}
	if code := list("tools/call"); code != http.StatusBadRequest {
		t.Errorf("tools/list with Mcp-Method tools/call: %d, want 400", code)
	}
}

// TestModernRoundsBounded: a call that asks without end (ask's run; an
// upstream's questions are capped by the gateway) is cancelled at
// maxInputRounds, and the client told so.
func TestModernRoundsBounded(t *testing.T) {
	ex := mcpconfig.DefaultExpose()
	ex.Agent = true
	stopped := make(chan error, 1)
	ep := New(&source{expose: ex}, &Options{Agent: foreverAgent{stopped}})
	c, w := modernClient(t, serve(t, ep), "alice", mcpclient.WithMaxInputRoundTrips(100))
	_, err := callText(t.Context(), c, "ask", map[string]any{"question": "q"})
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("input %d times", maxInputRounds)) {
		t.Errorf("ask: %v, want the bound on rounds", err)
	}
	if n := w.count("tools/call"); n != maxInputRounds+1 {
		t.Errorf("%d tools/call requests, want %d", n, maxInputRounds+1)
	}
	select {
	case err := <-stopped:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the run ended with %v, want it cancelled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the run was not cancelled")
	}
	testenv.WaitFor(t, 5*time.Second, "no call held", func() bool { return heldCount(ep) == 0 })
}

// foreverAgent asks its user again and again until its run is stopped,
// and says how on stopped.
type foreverAgent struct{ stopped chan<- error }

func (f foreverAgent) Ask(ctx context.Context, _, _, _ string, emit tools.Emitter) (Answer, error) {
	for {
		_, err := emit.(tools.Asker).Ask(ctx, tools.Question{Payload: tools.ElicitationPayload{Mode: mcp.ElicitationModeForm, Message: "again?",
			RequestedSchema: map[string]any{"type": "object"}}})
		if err != nil {
			f.stopped <- err
			return Answer{}, err
		}
	}
}

func waitEnded(t *testing.T, a *asker) {
	t.Helper()
	select {
	case <-a.ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream's call was not cancelled")
	}
}

// TestModernUnansweredCallLapses: a call whose client does not come back
// within InputWait is cancelled, upstream too, and a late retry is told
// to call again.
func TestModernUnansweredCallLapses(t *testing.T) {
	a := newAsker(t)
	ep, base := askerEndpoint(t, a, &Options{InputWait: 300 * time.Millisecond})
	args := map[string]any{"who": "me"}
	_, first := rawCall(t, base, "alice", "up__two", map[string]any{"arguments": args}, nil)
	state := stateOf(t, first)
	waitEnded(t, a)
	testenv.WaitFor(t, 5*time.Second, "no call held", func() bool { return heldCount(ep) == 0 })
	_, m := rawCall(t, base, "alice", "up__two", map[string]any{"arguments": args, "requestState": state,
		"inputResponses": map[string]any{"elysia-1": map[string]any{"action": "accept", "content": map[string]any{"a": "Ada"}}}}, nil)
	if _, msg := errorOf(m); !strings.Contains(msg, "call the tool again") {
		t.Errorf("late retry: %v, want an error saying to call again", m)
	}
}

// TestModernHeldCallsCapped: past MaxHeldCalls, a call's question is
// declined rather than held.
func TestModernHeldCallsCapped(t *testing.T) {
	a := newAsker(t)
	_, base := askerEndpoint(t, a, &Options{MaxHeldCalls: 1})
	_, first := rawCall(t, base, "alice", "up__two", map[string]any{"arguments": map[string]any{"who": "me"}}, nil)
	stateOf(t, first)
	_, second := rawCall(t, base, "alice", "up__two", map[string]any{"arguments": map[string]any{"who": "you"}}, nil)
	res, _ := second["result"].(map[string]any)
	if text := fmt.Sprint(res["content"]); res["resultType"] != "complete" || !strings.Contains(text, "name=decline") {
		t.Errorf("the second call: %v, want it completed with its questions declined", second)
	}
}

// alternating returns two endpoints over one asker server sharing a
// StateKey, a Relay (counted) and Replicas, both keeping their leases,
// and a balancer URL alternating between them; what goes to A through the
// Relay waits while toA is shut, and is dropped once dropA is set.
func alternating(t *testing.T, a *asker, toA *gate, dropA *atomic.Bool) (epA, epB *Endpoint, lb string, relayed *atomic.Int32, stopA func()) {
	t.Helper()
	src := &source{expose: mcpconfig.DefaultExpose(), gws: []*mcpgateway.Gateway{gateway(t, "up", a.url)}}
	key := reqstate.NewKey()
	store, reps := &memSessions{}, &memReplicas{}
	relayed = &atomic.Int32{}
	toB := newMemRelay(t, func() *Endpoint { return epB })
	toAr := newMemRelay(t, func() *Endpoint { toA.wait(); return epA })
	epA = New(src, &Options{Sessions: store, Replicas: reps, StateKey: key, Relay: toB})
	epB = New(src, &Options{Sessions: store, Replicas: reps, StateKey: key, Relay: relayFunc(func(msg []byte) error {
		if bytes.Contains(msg, []byte(relayInputRetry)) {
			relayed.Add(1)
		}
		if dropA.Load() {
			return nil
		}
		return toAr.Publish(msg)
	})})
	t.Cleanup(toA.open)
	for _, e := range []*Endpoint{epA, epB} {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); e.Run(ctx) }()
		stop := sync.OnceFunc(func() { cancel(); <-done })
		t.Cleanup(stop)
		if e == epA {
			stopA = stop
		}
	}
	testenv.WaitFor(t, 5*time.Second, "both replicas' leases", func() bool {
		live, _ := reps.LiveReplicas(t.Context())
		return len(live) == 2
	})
	lb = testenv.RoundRobin(t, serve(t, epA), serve(t, epB))
	t.Cleanup(func() {
		store.mu.Lock()
		defer store.mu.Unlock()
		if len(store.rows) != 0 {
			t.Errorf("%d sessions recorded for the replicas, want none", len(store.rows))
		}
	})
	return epA, epB, lb, relayed, stopA
}

type relayFunc func([]byte) error

func (f relayFunc) Publish(msg []byte) error { return f(msg) }

// TestModernRetryOnAnotherReplica: a 2026-07-28 call posted alternately
// to two replicas: the retry that lands on the replica not holding the
// call reaches the holder through the Relay, and the call goes on there.
func TestModernRetryOnAnotherReplica(t *testing.T) {
	a := newAsker(t)
	var dropA atomic.Bool
	_, _, lb, relayed, _ := alternating(t, a, &gate{}, &dropA)
	c, _ := modernClient(t, lb, "alice")
	for i := range 2 {
		text, err := callText(t.Context(), c, "up__two", map[string]any{"who": fmt.Sprint(i)})
		if err != nil || text != "name=accept:Ada color=accept:green" {
			t.Errorf("call %d: %q, %v", i, text, err)
		}
	}
	if n := a.runs.Load(); n != 2 {
		t.Errorf("up's two ran %d times, want twice", n)
	}
	if relayed.Load() == 0 {
		t.Error("no retry was relayed: the balancer did not alternate")
	}
}

// TestModernRetryHolderGone: a retry relayed to a replica that is gone
// (silent, and its lease dropped) gets an error saying to call again; one
// relayed to a replica that is only slow (silent, its lease live) waits
// for it.
func TestModernRetryHolderGone(t *testing.T) {
	a := newAsker(t)
	toA := &gate{}
	var dropA atomic.Bool
	epA, epB, _, _, stopA := alternating(t, a, toA, &dropA)
	baseA, baseB := serve(t, epA), serve(t, epB)
	args := map[string]any{"who": "me"}
	answer := map[string]any{"elysia-1": map[string]any{"action": "accept", "content": map[string]any{"a": "Ada"}}}

	// Slow: A hears nothing for longer than the silence bound, then hears.
	_, first := rawCall(t, baseA, "alice", "up__two", map[string]any{"arguments": args}, nil)
	toA.shut()
	time.AfterFunc(resumeRelayWait+inputRelayKeepalive, toA.open)
	_, m := rawCall(t, baseB, "alice", "up__two", map[string]any{"arguments": args, "requestState": stateOf(t, first), "inputResponses": answer}, nil)
	stateOf(t, m) // the next question, from A

	// Gone: A hears nothing and its lease is gone.
	_, first = rawCall(t, baseA, "alice", "up__two", map[string]any{"arguments": args}, nil)
	dropA.Store(true)
	stopA() // its lease goes
	start := time.Now()
	_, m = rawCall(t, baseB, "alice", "up__two", map[string]any{"arguments": args, "requestState": stateOf(t, first), "inputResponses": answer}, nil)
	if _, msg := errorOf(m); !strings.Contains(msg, "stopped: call the tool again") {
		t.Errorf("retry of a gone replica's call: %v, want an error saying to call again", m)
	}
	if d := time.Since(start); d > 2*resumeRelayWait {
		t.Errorf("the gone replica was known after %v, want about %v", d, resumeRelayWait)
	}
}

// TestModernOldClientUnchanged: a client pinned to 2025-11-25 next to a
// 2026-07-28 one keeps its session, and its questions come as requests on
// it.
func TestModernOldClientUnchanged(t *testing.T) {
	a := newAsker(t)
	_, base := askerEndpoint(t, a, nil)
	tr, err := mcptransport.NewStreamableHTTP(base + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	c := mcpclient.NewClient(tr, mcpclient.WithProtocolVersion(mcp.ProtocolVersion20251125),
		mcpclient.WithElicitationHandler(elicitHandler(func(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
			return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept,
				Content: map[string]any{"a": answerOf(req.Params.Message)}}}, nil
		})))
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	res, err := c.Initialize(t.Context(), mcp.InitializeRequest{})
	if err != nil || res.ProtocolVersion != mcp.ProtocolVersion20251125 || tr.GetSessionId() == "" {
		t.Fatalf("initialize: %v %+v, session %q; want 2025-11-25 with a session", err, res, tr.GetSessionId())
	}
	modern, _ := modernClient(t, base, "alice")
	for _, cl := range []*mcpclient.Client{c, modern} {
		if text, err := callText(t.Context(), cl, "up__two", nil); err != nil || text != "name=accept:Ada color=accept:green" {
			t.Errorf("up__two = %q, %v", text, err)
		}
	}
}

// modernOnlyUpstream is an MCP server that speaks only 2026-07-28 (mcp-go's
// answers initialize too unless told not to): its tool "confirm" asks for a
// name with an input_required result and answers with what it got.
func modernOnlyUpstream(t *testing.T) string {
	t.Helper()
	s := mcpserver.NewMCPServer("new", "1")
	form := map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string"}}}
	s.AddTool(mcp.NewTool("confirm"), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if r := mcpserver.ElicitationResponse(req.Params.InputResponses, "name"); r != nil {
			content, _ := r.Content.(map[string]any)
			return mcp.NewToolResultText(fmt.Sprintf("%s:%v", r.Action, content["a"])), nil
		}
		return mcpserver.NewInputRequestBuilder("").Elicit("name", mcp.ElicitationParams{Message: "name?", RequestedSchema: form}).ToolResult(), nil
	})
	h := mcpserver.NewStreamableHTTPServer(s, mcpserver.WithStreamableHTTPProtocolVersions(mcp.ProtocolVersion20260728),
		mcpserver.WithDisableLocalhostProtection(true))
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && !mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32601,"message":"Method not found"}}`)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp"
}

// TestModernAcrossEras: the question of a server that speaks only
// 2026-07-28 (an input_required result to the gateway) reaches a
// 2025-11-25 client as elicitation/create on its session, and a
// 2026-07-28 client as input_required; the question of a 2025-11-25
// server reaches both too (TestModernOldClientUnchanged).
func TestModernAcrossEras(t *testing.T) {
	src := &source{expose: mcpconfig.DefaultExpose(), gws: []*mcpgateway.Gateway{gateway(t, "new", modernOnlyUpstream(t))}}
	base := serve(t, New(src, nil))
	tr, err := mcptransport.NewStreamableHTTP(base + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	old := mcpclient.NewClient(tr, mcpclient.WithProtocolVersion(mcp.ProtocolVersion20251125),
		mcpclient.WithElicitationHandler(elicitHandler(func(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
			return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept,
				Content: map[string]any{"a": "old " + answerOf(req.Params.Message)}}}, nil
		})))
	if err := old.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = old.Close() })
	if res, err := old.Initialize(t.Context(), mcp.InitializeRequest{}); err != nil || res.ProtocolVersion != mcp.ProtocolVersion20251125 {
		t.Fatalf("initialize: %v %+v", err, res)
	}
	modern, w := modernClient(t, base, "alice")
	for _, tt := range []struct {
		c     *mcpclient.Client
		want  string
		calls int
	}{
		{old, "accept:old Ada", 1},
		{modern, "accept:Ada", 2},
	} {
		before := w.count("tools/call")
		if text, err := callText(t.Context(), tt.c, "new__confirm", nil); err != nil || text != tt.want {
			t.Errorf("new__confirm = %q, %v; want %q", text, err, tt.want)
		}
		if tt.c == modern && w.count("tools/call")-before != tt.calls {
			t.Errorf("the 2026-07-28 client sent %d tools/call requests, want %d", w.count("tools/call")-before, tt.calls)
		}
	}
}
