package mcpgateway

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

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
			got, err := discover(t.Context(), client, remote+"/mcp", challenge{"resource_metadata": tt.metadata})
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
	f := newAuthFixture(t)
	got, err := discover(t.Context(), f.as.Client(), f.rs.URL+"/mcp", challenge{"resource_metadata": f.rs.URL + "/.well-known/oauth-protected-resource/mcp"})
	if err != nil || got.as.TokenEndpoint != f.as.URL+"/token" {
		t.Errorf("discover on loopback = %v; want the fixture's token endpoint", err)
	}
}

// redirectingAS is a protected MCP server and its authorization server,
// both on 127.0.0.1, whose endpoint at redirect (/token, /register or
// /revoke) answers 307 to rec: a request that follows it re-posts the
// code, the verifier, the client's secret or a token to another server.
type redirectingAS struct {
	rs, as   *httptest.Server
	rec      *originRecorder
	redirect string
}

func newRedirectingAS(t *testing.T, redirect string) *redirectingAS {
	t.Helper()
	x := &redirectingAS{rec: newOriginRecorder(t), redirect: redirect}
	x.as = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == x.redirect {
			http.Redirect(w, r, x.rec.URL+r.URL.Path, http.StatusTemporaryRedirect)
			return
		}
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			writeJSON(w, map[string]any{
				"issuer": x.as.URL, "authorization_endpoint": x.as.URL + "/authorize", "token_endpoint": x.as.URL + "/token",
				"registration_endpoint": x.as.URL + "/register", "revocation_endpoint": x.as.URL + "/revoke",
				"code_challenge_methods_supported":      []string{"S256"},
				"token_endpoint_auth_methods_supported": []string{"client_secret_post", "none"},
			})
		case "/authorize":
			to, _ := url.Parse(r.URL.Query().Get("redirect_uri"))
			to.RawQuery = url.Values{"code": {"code-secret-4"}, "state": {r.URL.Query().Get("state")}}.Encode()
			http.Redirect(w, r, to.String(), http.StatusFound)
		case "/register":
			writeJSON(w, map[string]any{"client_id": "dyn-client", "token_endpoint_auth_method": "none"})
		case "/token":
			writeJSON(w, map[string]any{"access_token": "good-token", "token_type": "Bearer", "expires_in": 3600})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(x.as.Close)
	x.rs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/oauth-protected-resource/mcp" {
			writeJSON(w, map[string]any{"resource": x.rs.URL + "/mcp", "authorization_servers": []string{x.as.URL}})
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+x.rs.URL+`/.well-known/oauth-protected-resource/mcp"`)
		http.Error(w, `{"error":"invalid_token"}`, http.StatusUnauthorized)
	}))
	t.Cleanup(x.rs.Close)
	return x
}

// TestOAuthRequestsDoNotFollowRedirects checks that token (code exchange,
// client credentials, refresh), registration and revocation requests
// answered with a 307 are not sent again to where it points: the error
// names the endpoint and carries none of the secrets.
func TestOAuthRequestsDoNotFollowRedirects(t *testing.T) {
	const clientSecret, refreshToken, accessToken = "client-secret-5", "refresh-secret-6", "access-secret-7"
	tests := []struct {
		name, redirect string
		oauth          mcpconfig.OAuthConfig
		stored         bool // alice has a token about to expire, with a refresh token
		signOut        bool
	}{
		{"code exchange", "/token", mcpconfig.OAuthConfig{ClientID: "pre", ClientSecret: clientSecret, ClientAuth: mcpconfig.AuthClientSecretPost}, false, false},
		{"client credentials", "/token", mcpconfig.OAuthConfig{Grant: mcpconfig.GrantClientCredentials, ClientID: "svc", ClientSecret: clientSecret, ClientAuth: mcpconfig.AuthClientSecretPost}, false, false},
		{"registration", "/register", mcpconfig.OAuthConfig{}, false, false},
		{"refresh", "/token", mcpconfig.OAuthConfig{ClientID: "pre", ClientSecret: clientSecret, ClientAuth: mcpconfig.AuthClientSecretPost}, true, false},
		{"revocation", "/revoke", mcpconfig.OAuthConfig{ClientID: "pre", ClientSecret: clientSecret, ClientAuth: mcpconfig.AuthClientSecretPost}, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := newRedirectingAS(t, tt.redirect)
			cfg := mcpconfig.ServerConfig{Name: "docs", Transport: mcpconfig.TransportHTTP, URL: x.rs.URL + "/mcp", Enabled: true,
				ConnectTimeout: 5 * time.Second, CallTimeout: 5 * time.Second, OAuth: &tt.oauth}
			store := &MemoryTokenStore{}
			if tt.stored {
				if err := store.Put(t.Context(), TokenKey{Server: "docs", User: "alice"}, &Token{
					AccessToken: accessToken, RefreshToken: refreshToken, TokenType: "Bearer", Expiry: time.Now().Add(time.Second),
					Resource: x.rs.URL + "/mcp", Issuer: x.as.URL, TokenURL: x.as.URL + "/token",
					ClientID: "pre", ClientSecret: clientSecret, AuthMethod: mcpconfig.AuthClientSecretPost}); err != nil {
					t.Fatal(err)
				}
			}
			g := newGateway(t, cfg, &Options{Tokens: store, Browser: FetchBrowser{}})
			var err error
			if tt.signOut {
				err = g.SignOut(t.Context(), "alice")
			} else {
				_, err = whoami(t, g, "alice")
				if !errors.Is(err, ErrRedirectRefused) || !strings.Contains(err.Error(), x.as.URL+tt.redirect) {
					t.Errorf("whoami = %v, want ErrRedirectRefused naming %s%s", err, x.as.URL, tt.redirect)
				}
			}
			for _, s := range []string{clientSecret, refreshToken, accessToken, "code-secret-4"} {
				if err != nil && strings.Contains(err.Error(), s) {
					t.Errorf("the error carries a secret: %v", err)
				}
			}
			if got := x.rec.requests(); len(got) != 0 {
				t.Errorf("the redirect was followed; the other server got:\n%s", strings.Join(got, "\n\n"))
			}
		})
	}
}
