package mcpgateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// These tests classify the errors mcp-go (go.mod's version) really returns
// for HTTP servers that answer with a status, since it gives the status only
// as text: an upgrade that changes the text fails them instead of
// re-routing the model's advice silently.

// remoteGateway returns a gateway of an HTTP server (transport http or sse)
// at url.
func remoteGateway(t *testing.T, transport, url string) *Gateway {
	t.Helper()
	return newGateway(t, mcpconfig.ServerConfig{Name: "api", Transport: transport, URL: url, Enabled: true,
		ConnectTimeout: 5 * time.Second, CallTimeout: 5 * time.Second}, nil)
}

// TestPermanentFailureOfHTTPStatus connects to servers that answer every
// request with a status: a 4xx but 408 and 429 fails again however often it
// is retried, and the rest may pass.
func TestPermanentFailureOfHTTPStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		transport string
		status    int
		want      string
	}{
		// A 4xx on the Streamable HTTP handshake falls back to SSE, whose
		// GET meets the same status.
		{"http 404", mcpconfig.TransportHTTP, http.StatusNotFound, "its URL answers HTTP 404"},
		{"http 403", mcpconfig.TransportHTTP, http.StatusForbidden, "its URL answers HTTP 403"},
		{"http 405", mcpconfig.TransportHTTP, http.StatusMethodNotAllowed, "its URL answers HTTP 405"},
		{"sse 404", mcpconfig.TransportSSE, http.StatusNotFound, "its URL answers HTTP 404"},
		{"sse 410", mcpconfig.TransportSSE, http.StatusGone, "its URL answers HTTP 410"},
		{"http 408", mcpconfig.TransportHTTP, http.StatusRequestTimeout, ""},
		{"http 429", mcpconfig.TransportHTTP, http.StatusTooManyRequests, ""},
		{"sse 429", mcpconfig.TransportSSE, http.StatusTooManyRequests, ""},
		{"http 500", mcpconfig.TransportHTTP, http.StatusInternalServerError, ""},
		{"http 503", mcpconfig.TransportHTTP, http.StatusServiceUnavailable, ""},
		{"sse 502", mcpconfig.TransportSSE, http.StatusBadGateway, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				// A body that names another status must not fool the
				// classification.
				http.Error(w, "try status 404 elsewhere", tt.status)
			}))
			t.Cleanup(ts.Close)
			err := remoteGateway(t, tt.transport, ts.URL+"/mcp").Connect(t.Context())
			if err == nil {
				t.Fatal("Connect succeeded")
			}
			if got := permanentFailure(err); got != tt.want {
				t.Errorf("permanentFailure(%q) = %q, want %q", err, got, tt.want)
			}
		})
	}
}

// TestPermanentFailureOfRequestStatus: a tools/call (sent by mcp-go's
// client) or tools/list (sent raw through its transport) answered with an
// HTTP status on a live Streamable HTTP session is classified like the
// handshake's.
func TestPermanentFailureOfRequestStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		method string
		status int
		want   string
	}{
		{"tools/call", http.StatusForbidden, "its URL answers HTTP 403"},
		{"tools/call", http.StatusTooManyRequests, ""},
		{"tools/call", http.StatusBadGateway, ""},
		{"tools/list", http.StatusForbidden, "its URL answers HTTP 403"},
		{"tools/list", http.StatusServiceUnavailable, ""},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.method, " ", tt.status), func(t *testing.T) {
			t.Parallel()
			srv := mcpserver.NewMCPServer("api", "1.0.0")
			srv.AddTool(mcp.NewTool("whoami"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultText("ok"), nil
			})
			h := mcpserver.NewStreamableHTTPServer(srv)
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				if bytes.Contains(body, []byte(`"`+tt.method+`"`)) {
					http.Error(w, "no: status 404", tt.status)
					return
				}
				r.Body = io.NopCloser(bytes.NewReader(body))
				h.ServeHTTP(w, r)
			}))
			t.Cleanup(ts.Close)
			_, err := remoteGateway(t, mcpconfig.TransportHTTP, ts.URL+"/mcp").Execute(t.Context(), "whoami", nil)
			if err == nil {
				t.Fatal("Execute succeeded")
			}
			if got := permanentFailure(err); got != tt.want {
				t.Errorf("permanentFailure(%q) = %q, want %q", err, got, tt.want)
			}
		})
	}
}

// TestPermanentFailureOfURLScheme: a URL that is not http or https fails
// in net/http before anything is sent.
func TestPermanentFailureOfURLScheme(t *testing.T) {
	t.Parallel()
	for _, url := range []string{"ftp://127.0.0.1/mcp", "localhost:8080/mcp"} {
		t.Run(url, func(t *testing.T) {
			t.Parallel()
			err := remoteGateway(t, mcpconfig.TransportHTTP, url).Connect(t.Context())
			if err == nil {
				t.Fatal("Connect succeeded")
			}
			if got, want := permanentFailure(err), "its URL is not an http or https URL"; got != want {
				t.Errorf("permanentFailure(%q) = %q, want %q", err, got, want)
			}
		})
	}
}

// TestServerAnswerIsNotPermanent: a server that answers a call with a
// JSON-RPC error is up, whatever its message says: a message quoting a
// status or a scheme error (a fetch tool given a bad URL by the model) is
// the tool's failure, not the server's configuration.
func TestServerAnswerIsNotPermanent(t *testing.T) {
	t.Parallel()
	for _, msg := range []string{
		`fetch ftp://files.example/a: unsupported protocol scheme "ftp"`,
		"upstream API: request failed with status 404: no such repository",
		"upstream API: unexpected status code: 403",
	} {
		t.Run(msg, func(t *testing.T) {
			t.Parallel()
			srv := mcpserver.NewMCPServer("api", "1.0.0")
			srv.AddTool(mcp.NewTool("fetch"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return nil, errors.New(msg)
			})
			ts := httptest.NewServer(mcpserver.NewStreamableHTTPServer(srv))
			t.Cleanup(ts.Close)
			_, err := remoteGateway(t, mcpconfig.TransportHTTP, ts.URL+"/mcp").Execute(t.Context(), "fetch", nil)
			if err == nil {
				t.Fatal("Execute succeeded")
			}
			if got := permanentFailure(err); got != "" {
				t.Errorf("permanentFailure(%q) = %q, want \"\": the server answered", err, got)
			}
		})
	}
}
