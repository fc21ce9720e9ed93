package mcpendpoint

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/mcpendpoint/internal/catalog"
	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// rawTool is the tool rawUpstream lists, exactly as it sends it: an
// annotation no library knows, schemas with <, > and &, an output schema.
const rawTool = `{"name":"pick","description":"a <b>bold</b> & odd tool",` +
	`"inputSchema":{"type":"object","properties":{"q":{"type":"string","pattern":"^<[a-z]+>&$"}},"required":["q"]},` +
	`"outputSchema":{"type":"object","properties":{"r":{"type":"string","description":"x < y"}}},` +
	`"annotations":{"readOnlyHint":true,"x-vendor":{"cost":3},"title":"Pick <one>"}}`

// rawUpstream is an MCP server over Streamable HTTP written by hand, so
// that its tools/list bytes are known: no library re-encodes them.
func rawUpstream(t *testing.T) string {
	t.Helper()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.NewDecoder(r.Body).Decode(&req) != nil || len(req.ID) == 0 {
			w.WriteHeader(http.StatusAccepted) // a notification
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch req.Method {
		case "initialize":
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":{"protocolVersion":"2025-06-18",`+
				`"capabilities":{"tools":{}},"serverInfo":{"name":"raw","version":"1"}}}`)
		case "tools/list":
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":{"tools":[`+rawTool+`]}}`)
		default:
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"error":{"code":-32601,"message":"no such method"}}`)
		}
	}))
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp"
}

// rawSession opens a Streamable HTTP session of user on base by hand and
// returns its id.
func rawSession(t *testing.T, base, user string) string {
	t.Helper()
	resp := rawPost(t, base, user, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",`+
		`"capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	id := resp.Header.Get("Mcp-Session-Id")
	_ = resp.Body.Close()
	if id == "" {
		t.Fatalf("initialize: %d, no session id", resp.StatusCode)
	}
	_ = rawPost(t, base, user, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`).Body.Close()
	return id
}

func rawPost(t *testing.T, base, user, session, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("X-User", user)
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", mcp.ProtocolVersion20251125)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// rawStream opens session's GET stream and waits until the endpoint counts
// it; it closes when the test ends.
func rawStream(t *testing.T, ep *Endpoint, base, user, session string) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/mcp", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("X-User", user)
	req.Header.Set("Mcp-Session-Id", session)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body) // until the test cancels it
			_ = resp.Body.Close()
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	deadline := time.Now().Add(10 * time.Second)
	for !ep.sessions.Streaming(session, user) {
		if time.Now().After(deadline) {
			t.Fatal("the GET stream never opened")
		}
		time.Sleep(5 * time.Millisecond) // polling, bounded by the deadline
	}
}

// listedBytes is the tools of a tools/list response body, each as sent.
func listedBytes(t *testing.T, body []byte) []json.RawMessage {
	t.Helper()
	var res struct {
		Result struct {
			Tools []json.RawMessage `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(body, &res); err != nil {
		t.Fatalf("tools/list answer %q: %v", body, err)
	}
	return res.Result.Tools
}

// TestListPassesToolsUnchanged: over Streamable HTTP and over stdio, a
// listed tool's description, schemas and annotations are the bytes the
// server sent, an annotation no library knows included; only its name
// changes.
func TestListPassesToolsUnchanged(t *testing.T) {
	src := &source{expose: mcpconfig.DefaultExpose(), gws: []*mcpgateway.Gateway{gateway(t, "raw", rawUpstream(t))}}
	ep := New(src, nil)
	base := serve(t, ep)
	want := strings.Replace(rawTool, `"name":"pick"`, `"name":"raw__pick"`, 1)

	sid := rawSession(t, base, "alice")
	rawStream(t, ep, base, "alice", sid)
	resp := rawPost(t, base, "alice", sid, `{"jsonrpc":"2.0","id":"l1","method":"tools/list","params":{}}`)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if got := listedBytes(t, body); len(got) != 1 || string(got[0]) != want {
		t.Errorf("tools/list over HTTP gave\n%s\nwant the tool as the server sent it:\n%s", got, want)
	}

	// Bob naming alice's session is not answered from her list.
	resp = rawPost(t, base, "bob", sid, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("bob listing with alice's session: %d, want 404", resp.StatusCode)
	}

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- ep.ServeStdio(t.Context(), inR, outW, "alice"); _ = outW.Close() }()
	lines := bufio.NewScanner(outR)
	lines.Buffer(nil, 1<<20)
	send := func(msg string) {
		if _, err := io.WriteString(inW, msg+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if !lines.Scan() {
		t.Fatal("stdio: no answer to initialize")
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if !lines.Scan() {
		t.Fatal("stdio: no answer to tools/list")
	}
	if got := listedBytes(t, lines.Bytes()); len(got) != 1 || string(got[0]) != want {
		t.Errorf("tools/list over stdio gave\n%s\nwant\n%s", got, want)
	}
	_ = inW.Close()
	if err := <-done; err != nil {
		t.Errorf("ServeStdio: %v", err)
	}
}

// TestFastListMatchesMCPGo: the list answered from the encoded catalog
// holds the tools mcp-go's own answer holds, page for page, ask included.
func TestFastListMatchesMCPGo(t *testing.T) {
	src := &source{expose: mcpconfig.DefaultExpose(), gws: []*mcpgateway.Gateway{
		gateway(t, "a", upstream(t, "echo")), gateway(t, "b", upstream(t, "echo")),
	}}
	ep := New(src, &Options{Agent: agent{}})
	base := serve(t, ep)
	c, err := mcpclient.NewStreamableHttpClient(base + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	connect(t, c) // no GET stream: mcp-go answers
	slow, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	//lint:ignore SA1019 the GET stream of the protocol the endpoint serves (2025-11-25)
	c2, err := mcpclient.NewStreamableHttpClient(base+"/mcp", mcptransport.WithContinuousListening()) //nolint:staticcheck // see above
	if err != nil {
		t.Fatal(err)
	}
	connect(t, c2)
	sid := c2.GetSessionId()
	deadline := time.Now().Add(10 * time.Second)
	for !ep.sessions.Streaming(sid, "alice") {
		if time.Now().After(deadline) {
			t.Fatal("the client's GET stream never opened")
		}
		time.Sleep(5 * time.Millisecond) // polling, bounded by the deadline
	}
	fast, err := c2.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(slow.Tools)
	b, _ := json.Marshal(fast.Tools)
	if !bytes.Equal(a, b) || len(fast.Tools) != 3 {
		t.Errorf("fast list\n%s\nwant mcp-go's\n%s", b, a)
	}
}

// modernList posts a 2026-07-28 tools/list to base's /mcp and returns
// the answer's body.
func modernList(t *testing.T, base string) []byte {
	t.Helper()
	status, b := modernPost(t, base, "tools/list", "", "")
	if status != http.StatusOK {
		t.Fatalf("tools/list: %d %s", status, b)
	}
	return b
}

// TestFastListModern: a 2026-07-28 tools/list answered from the encoded
// catalog says what mcp-go's answer says (resultType, caching hints,
// serverInfo, the tools), and its ttlMs follows the catalogue: a list
// that left a server out is kept no longer than until it is built again.
func TestFastListModern(t *testing.T) {
	src := &source{expose: mcpconfig.DefaultExpose(), gws: []*mcpgateway.Gateway{
		gateway(t, "a", upstream(t, "echo")), gateway(t, "b", upstream(t, "echo")),
	}}
	ep := New(src, &Options{Agent: agent{}, Version: "9.9"})
	fast := modernList(t, serve(t, ep))
	if !bytes.Contains(fast, []byte(`"result":{"tools":[`)) {
		t.Fatalf("the list %s was not answered by the fast path", fast)
	}
	msg := json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	slow, err := json.Marshal(ep.srv.HandleMessage(mcpgateway.WithUser(t.Context(), "alice"), msg))
	if err != nil {
		t.Fatal(err)
	}
	type answer struct {
		Result map[string]json.RawMessage `json:"result"`
	}
	var f, s answer
	if json.Unmarshal(fast, &f) != nil || json.Unmarshal(slow, &s) != nil {
		t.Fatalf("answers %s and %s", fast, slow)
	}
	toolNames := func(raw json.RawMessage) string {
		var tools []struct{ Name string }
		_ = json.Unmarshal(raw, &tools)
		var out []string
		for _, tl := range tools {
			out = append(out, tl.Name)
		}
		return strings.Join(out, ",")
	}
	if got, want := toolNames(f.Result["tools"]), toolNames(s.Result["tools"]); got != want || got != "a__echo,b__echo,ask" {
		t.Errorf("fast list tools %s, mcp-go's %s", got, want)
	}
	delete(f.Result, "tools")
	delete(s.Result, "tools")
	a, _ := json.Marshal(f.Result)
	b, _ := json.Marshal(s.Result)
	if !bytes.Equal(a, b) || !bytes.Contains(a, []byte(`"ttlMs":30000`)) {
		t.Errorf("fast list result\n%s\nwant mcp-go's\n%s", a, b)
	}

	down := New(&source{expose: mcpconfig.DefaultExpose(), gws: []*mcpgateway.Gateway{
		gateway(t, "a", upstream(t, "echo")), gateway(t, "down", closedURL(t)),
	}}, nil)
	var d answer
	if err := json.Unmarshal(modernList(t, serve(t, down)), &d); err != nil {
		t.Fatal(err)
	}
	ttl, err := strconv.Atoi(string(d.Result["ttlMs"]))
	if err != nil || ttl > int(catalog.IncompleteTTL/time.Millisecond) || string(d.Result["cacheScope"]) != `"private"` {
		t.Errorf("a list without a down server: ttlMs %s, cacheScope %s; want at most %v, private", d.Result["ttlMs"], d.Result["cacheScope"], catalog.IncompleteTTL)
	}
}
