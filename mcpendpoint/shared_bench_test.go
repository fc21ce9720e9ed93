package mcpendpoint

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// benchPost POSTs body of session sid to url's /mcp and returns the
// status.
func benchPost(b *testing.B, url, sid, body string) (int, string) {
	b.Helper()
	req, _ := http.NewRequestWithContext(b.Context(), http.MethodPost, url+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", mcp.ProtocolVersion20251125)
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id")
}

const benchInit = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"bench","version":"1"}}}`

// BenchmarkSharedSessions measures a ping of an open session over HTTP on
// loopback, by an endpoint that keeps its sessions to itself (local), and
// by one that shares them (shared: the session was adopted from another
// replica; the SessionStore is in memory, so a database's round trips are
// not counted); and adopting a session another replica opened (adopt: its
// first request there, the SessionStore's read not counted):
//
//	go test -run '^$' -bench BenchmarkSharedSessions ./mcpendpoint/
func BenchmarkSharedSessions(b *testing.B) {
	endpoint := func(o *Options) string {
		ep := New(&source{expose: mcpconfig.DefaultExpose()}, o)
		hs := httptest.NewServer(httpHandler(ep))
		b.Cleanup(hs.Close)
		b.Cleanup(func() { _ = ep.Close(context.Background()) })
		return hs.URL
	}
	const ping = `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	b.Run("local", func(b *testing.B) {
		url := endpoint(nil)
		_, sid := benchPost(b, url, "", benchInit)
		for b.Loop() {
			benchPost(b, url, sid, ping)
		}
	})
	store := &memSessions{}
	opener := endpoint(&Options{Sessions: store})
	b.Run("shared", func(b *testing.B) {
		url := endpoint(&Options{Sessions: store})
		_, sid := benchPost(b, opener, "", benchInit)
		if code, _ := benchPost(b, url, sid, ping); code != http.StatusOK {
			b.Fatalf("adopting: %d", code)
		}
		for b.Loop() {
			benchPost(b, url, sid, ping)
		}
	})
	b.Run("adopt", func(b *testing.B) {
		url := endpoint(&Options{Sessions: store})
		for b.Loop() {
			b.StopTimer()
			_, sid := benchPost(b, opener, "", benchInit)
			b.StartTimer()
			if code, _ := benchPost(b, url, sid, ping); code != http.StatusOK {
				b.Fatalf("adopting: %d", code)
			}
		}
	})
}
