package mcpauth

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestAuthServerMetaURLs(t *testing.T) {
	issuer := func(s string) *url.URL { u, _ := url.Parse(s); return u }
	tests := []struct {
		issuer string
		want   []string
	}{
		{"https://as.example", []string{"https://as.example/.well-known/oauth-authorization-server", "https://as.example/.well-known/openid-configuration"}},
		{"https://as.example/tenant1", []string{
			"https://as.example/.well-known/oauth-authorization-server/tenant1",
			"https://as.example/.well-known/openid-configuration/tenant1",
			"https://as.example/tenant1/.well-known/openid-configuration"}},
	}
	for _, tt := range tests {
		t.Run(tt.issuer, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, authServerMetaURLs(issuer(tt.issuer))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestDiscoveryMalformedMetadata: metadata that is not JSON is an error
// saying so.
func TestDiscoveryMalformedMetadata(t *testing.T) {
	// Metadata that is not JSON.
	as, rs := newLoopbackAS(t)
	tgt, err := discover(t.Context(), as.Client(), rs.URL+"/nothing", Challenge{"resource_metadata": as.URL + "/html"})
	if err == nil || !strings.Contains(err.Error(), "malformed metadata") {
		t.Errorf("discover = %v, %v; want a malformed-metadata error", tgt, err)
	}
}

// pinnedClient trusts tls's certificate (valid for example.com) and dials
// 127.0.0.1 for example.com: a remote https server, as far as the gateway
// can tell from its URL, without leaving the machine.
func pinnedClient(tls *httptest.Server) *http.Client {
	tr := tls.Client().Transport.(*http.Transport).Clone()
	var d net.Dialer
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if host, port, err := net.SplitHostPort(addr); err == nil && host == "example.com" {
			addr = net.JoinHostPort("127.0.0.1", port)
		}
		return d.DialContext(ctx, network, addr)
	}
	return &http.Client{Transport: tr, Timeout: 5 * time.Second}
}

// TestDiscoveryChecksEveryHop checks that discovery for a remote https
// server goes neither to a loopback address (named or reached by a
// redirect) nor over plain http (reached by a redirect), while redirects
// within the rules still work and a loopback http server may still use
// loopback http.
func TestDiscoveryChecksEveryHop(t *testing.T) {
	rec := newOriginRecorder(t)
	recURL, _ := url.Parse(rec.URL)
	var remote string // https://example.com:<port>, set before any request
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/to-loopback":
			http.Redirect(w, r, rec.URL+"/prm", http.StatusFound)
		case "/to-http":
			http.Redirect(w, r, "http://example.com:"+recURL.Port()+"/prm", http.StatusFound)
		case "/to-self":
			http.Redirect(w, r, "/prm", http.StatusFound)
		case "/prm":
			writeJSON(w, map[string]any{"resource": remote + "/mcp", "authorization_servers": []string{remote}})
		case "/prm-loopback-token":
			writeJSON(w, map[string]any{"resource": remote + "/mcp", "authorization_servers": []string{remote + "/loopback-token"}})
		case "/prm-loopback-as":
			writeJSON(w, map[string]any{"resource": remote + "/mcp", "authorization_servers": []string{rec.URL}})
		case "/.well-known/oauth-authorization-server":
			writeJSON(w, map[string]any{"issuer": remote, "token_endpoint": remote + "/token", "authorization_endpoint": remote + "/authorize"})
		case "/.well-known/oauth-authorization-server/loopback-token":
			writeJSON(w, map[string]any{"issuer": remote + "/loopback-token", "token_endpoint": rec.URL + "/token"})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(ts.Close)
	tsURL, _ := url.Parse(ts.URL)
	remote = "https://example.com:" + tsURL.Port()
	client := pinnedClient(ts)

	tests := []struct {
		name, metadata string
		refused        bool
	}{
		{"metadata on loopback", rec.URL + "/prm", true},
		{"redirect to loopback", remote + "/to-loopback", true},
		{"redirect to plain http", remote + "/to-http", true},
		{"authorization server on loopback", remote + "/prm-loopback-as", true},
		{"token endpoint on loopback", remote + "/prm-loopback-token", true},
		{"redirect within the rules", remote + "/to-self", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(rec.requests())
			got, err := discover(t.Context(), client, remote+"/mcp", Challenge{"resource_metadata": tt.metadata})
			if tt.refused && err == nil {
				t.Errorf("discover = %+v, want a refusal", got.as)
			}
			if !tt.refused && (err != nil || got.as.TokenEndpoint != remote+"/token") {
				t.Errorf("discover = %v; want the token endpoint %s/token", err, remote)
			}
			if n := len(rec.requests()) - before; n != 0 {
				t.Errorf("discovery sent %d requests to a refused url", n)
			}
		})
	}

	// A loopback http server may still use loopback http, on other ports.
	as, rs := newLoopbackAS(t)
	got, err := discover(t.Context(), as.Client(), rs.URL+"/mcp", Challenge{"resource_metadata": rs.URL + "/.well-known/oauth-protected-resource/mcp"})
	if err != nil || got.as.TokenEndpoint != as.URL+"/token" {
		t.Errorf("discover on loopback = %v; want the fixture's token endpoint", err)
	}
}
