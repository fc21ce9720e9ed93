package mcpgateway

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/elysia-go/elysia/mcpgateway/mcpauth"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

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
			store := &mcpauth.MemoryTokenStore{}
			if tt.stored {
				if err := store.Put(t.Context(), mcpauth.TokenKey{Server: "docs", User: "alice"}, &mcpauth.Token{
					AccessToken: accessToken, RefreshToken: refreshToken, TokenType: "Bearer", Expiry: time.Now().Add(time.Second),
					Resource: x.rs.URL + "/mcp", Issuer: x.as.URL, TokenURL: x.as.URL + "/token",
					ClientID: "pre", ClientSecret: clientSecret, AuthMethod: mcpconfig.AuthClientSecretPost}); err != nil {
					t.Fatal(err)
				}
			}
			g := newGateway(t, cfg, &Options{Tokens: store, Browser: mcpauth.FetchBrowser{}})
			var err error
			if tt.signOut {
				err = g.SignOut(t.Context(), "alice")
			} else {
				_, err = whoami(t, g, "alice")
				if !errors.Is(err, mcpauth.ErrRedirectRefused) || !strings.Contains(err.Error(), x.as.URL+tt.redirect) {
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
