package mcpgateway

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/elysia-go/elysia/internal/testenv"
	"github.com/elysia-go/elysia/mcpgateway/internal/session"
	"github.com/elysia-go/elysia/mcpgateway/mcpauth"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
	"github.com/elysia-go/elysia/tools"
)

func whoami(t *testing.T, g *Gateway, user string) (string, error) {
	t.Helper()
	res, err := g.Execute(WithUser(t.Context(), user), "whoami", nil)
	if err != nil {
		return "", err
	}
	return res.Text(), nil
}

func TestOAuthSignInWithPKCEAndResource(t *testing.T) {
	t.Parallel()
	f := newAuthFixture(t)
	logs := &testenv.SyncBuffer{}
	store := &mcpauth.MemoryTokenStore{}
	g := newGateway(t, f.config("docs"), &Options{Tokens: store, Browser: mcpauth.FetchBrowser{},
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	got, err := whoami(t, g, "alice")
	if err != nil {
		t.Fatalf("whoami: %v", err)
	}
	if got != "subject-1" {
		t.Errorf("whoami = %q, want subject-1", got)
	}
	auths := f.authRequests()
	if len(auths) != 1 {
		t.Fatalf("authorization requests = %d, want 1", len(auths))
	}
	a := auths[0]
	resource := f.rs.URL + "/mcp"
	for k, want := range map[string]string{"response_type": "code", "code_challenge_method": "S256", "resource": resource, "client_id": "dyn-client"} {
		if a.Get(k) != want {
			t.Errorf("authorize %s = %q, want %q", k, a.Get(k), want)
		}
	}
	if a.Get("code_challenge") == "" || a.Get("state") == "" {
		t.Errorf("authorize without code_challenge or state: %v", a)
	}
	// The AS offers offline_access; nothing else names a scope.
	if a.Get("scope") != "offline_access" {
		t.Errorf("authorize scope = %q, want offline_access", a.Get("scope"))
	}
	tr := f.tokenRequests()
	if len(tr) != 1 || tr[0].Get("resource") != resource || tr[0].Get("code_verifier") == "" {
		t.Errorf("token requests = %v, want one with resource and code_verifier", tr)
	}
	tok, err := store.Get(t.Context(), mcpauth.TokenKey{Server: "docs", User: "alice"})
	if err != nil || tok.Resource != resource {
		t.Fatalf("stored token = %v, %v; want one for %s", tok, err, resource)
	}
	// Discovery went through the header's PRM, then RFC 8414 metadata.
	var discovery []string
	for _, p := range f.requests() {
		if strings.Contains(p, "/.well-known/") {
			discovery = append(discovery, p)
		}
	}
	want := []string{"RS GET /.well-known/oauth-protected-resource/mcp", "AS GET /.well-known/oauth-authorization-server"}
	if diff := cmp.Diff(want, discovery); diff != "" {
		t.Errorf("discovery requests (-want +got):\n%s", diff)
	}
	// No token value in logs, Status or the token's own printing.
	st, _ := json.Marshal(g.StatusFor(t.Context(), "alice"))
	for _, secret := range []string{tok.AccessToken, tok.RefreshToken} {
		for name, text := range map[string]string{"logs": logs.String(), "status": string(st), "token %v": tok.String(), "token %#v": tok.GoString()} {
			if strings.Contains(text, secret) {
				t.Errorf("%s carry a token value", name)
			}
		}
	}
}

func TestOAuthDiscoveryOrder(t *testing.T) {
	t.Parallel()
	// Without resource_metadata in the header: the path-suffixed PRM first.
	f := newAuthFixture(t)
	f.prmInHeader = false
	g := newGateway(t, f.config("docs"), &Options{Browser: mcpauth.FetchBrowser{}})
	if _, err := whoami(t, g, "alice"); err != nil {
		t.Fatalf("whoami: %v", err)
	}
	var first string
	for _, p := range f.requests() {
		if strings.Contains(p, "oauth-protected-resource") {
			first = p
			break
		}
	}
	if first != "RS GET /.well-known/oauth-protected-resource/mcp" {
		t.Errorf("first PRM request = %q, want the path-suffixed well-known URI", first)
	}
}

func TestOAuthRefusals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup func(f *authFixture)
		want  string
	}{
		{"resource mismatch", func(f *authFixture) { f.prmResource = "https://evil.example.com/mcp" }, "not for this server"},
		{"state mismatch", func(f *authFixture) { f.badState = true }, "state mismatch"},
		{"no S256", func(f *authFixture) { f.noS256 = true }, "does not offer PKCE with S256"},
		// RFC 9207: an AS that says it sends iss and then does not is
		// refused, and so is an iss that names another issuer.
		{"iss advertised, missing", func(f *authFixture) { f.issSupported = true }, `comes from issuer ""`},
		{"iss of another issuer", func(f *authFixture) { f.iss = "https://evil.example" }, `comes from issuer "https://evil.example"`},
		{"token endpoint 500 with HTML", func(f *authFixture) { f.tokenFails = 500 }, "token endpoint answered 500 Internal Server Error (text/html), not a token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newAuthFixture(t)
			tt.setup(f)
			store := &mcpauth.MemoryTokenStore{}
			g := newGateway(t, f.config("docs"), &Options{Tokens: store, Browser: mcpauth.FetchBrowser{}})
			_, err := whoami(t, g, "alice")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one saying %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "upstream broke") {
				t.Errorf("err quotes the token endpoint's body: %v", err)
			}
			if _, err := store.Get(t.Context(), mcpauth.TokenKey{Server: "docs", User: "alice"}); !errors.Is(err, mcpauth.ErrNoToken) {
				t.Errorf("a token was stored after a refused sign-in")
			}
			if tt.name == "resource mismatch" && len(f.authRequests()) != 0 {
				t.Errorf("authorization requested for a mismatched resource")
			}
			if st := g.StatusFor(t.Context(), "bob"); st.State != session.StateNeedsSignIn {
				t.Errorf("bob's state = %s, want needs_sign_in (untouched by alice's failure)", st.State)
			}
		})
	}
}

func TestOAuthMalformedMetadata(t *testing.T) {
	t.Parallel()
	f := newAuthFixture(t)
	rs := f.rs
	_ = rs
	g := newGateway(t, mcpconfig.ServerConfig{Name: "x", Transport: mcpconfig.TransportHTTP, URL: f.as.URL + "/mcp", Enabled: true, OAuth: &mcpconfig.OAuthConfig{}},
		&Options{Browser: mcpauth.FetchBrowser{}})
	// The AS host serves no MCP endpoint: the client gets a 404, not a
	// 401, so the error is the server's, not a sign-in.
	if _, err := whoami(t, g, "alice"); err == nil {
		t.Fatal("want an error")
	}
}

func TestOAuthRefreshOnExpiryAndRevokedRefreshToken(t *testing.T) {
	t.Parallel()
	f := newAuthFixture(t)
	f.expiresIn = 1 // within refreshMargin: the next request refreshes first
	store := &mcpauth.MemoryTokenStore{}
	g := newGateway(t, f.config("docs"), &Options{Tokens: store, Browser: mcpauth.FetchBrowser{}})
	if _, err := whoami(t, g, "alice"); err != nil {
		t.Fatalf("whoami: %v", err)
	}
	first, _ := store.Get(t.Context(), mcpauth.TokenKey{Server: "docs", User: "alice"})
	if _, err := whoami(t, g, "alice"); err != nil {
		t.Fatalf("whoami after expiry: %v", err)
	}
	var refreshes []url.Values
	for _, r := range f.tokenRequests() {
		if r.Get("grant_type") == "refresh_token" {
			refreshes = append(refreshes, r)
		}
	}
	if len(refreshes) == 0 || refreshes[0].Get("resource") != f.rs.URL+"/mcp" {
		t.Fatalf("refresh requests = %v, want one with the resource", refreshes)
	}
	if len(f.authRequests()) != 1 {
		t.Errorf("authorization requests = %d, want 1 (refreshed, not signed in again)", len(f.authRequests()))
	}
	second, _ := store.Get(t.Context(), mcpauth.TokenKey{Server: "docs", User: "alice"})
	if second.AccessToken == first.AccessToken {
		t.Errorf("the stored token was not replaced by the refresh")
	}

	// A revoked refresh token: the user must sign in again, and the
	// token is forgotten.
	f.mu.Lock()
	f.revoked[second.RefreshToken] = true
	f.mu.Unlock()
	g2 := newGateway(t, f.config("docs"), &Options{Tokens: store})
	_, err := whoami(t, g2, "alice")
	if !errors.Is(err, mcpauth.ErrSignInRequired) {
		t.Fatalf("err = %v, want ErrSignInRequired", err)
	}
	if _, err := store.Get(t.Context(), mcpauth.TokenKey{Server: "docs", User: "alice"}); !errors.Is(err, mcpauth.ErrNoToken) {
		t.Errorf("the refused token is still stored")
	}
}

func TestOAuthStepUp(t *testing.T) {
	t.Parallel()
	f := newAuthFixture(t)
	f.scopeInHeader = "read"
	f.callScopes = []string{"read", "write"}
	g := newGateway(t, f.config("docs"), &Options{Browser: mcpauth.FetchBrowser{}})
	if _, err := whoami(t, g, "alice"); err != nil {
		t.Fatalf("whoami: %v", err)
	}
	auths := f.authRequests()
	if len(auths) != 2 {
		t.Fatalf("authorization requests = %d, want 2 (sign-in, step-up)", len(auths))
	}
	if got := auths[0].Get("scope"); got != "read offline_access" {
		t.Errorf("first scope = %q, want the challenge's plus offline_access", got)
	}
	if got := strings.Fields(auths[1].Get("scope")); !containsAll(got, []string{"read", "write"}) {
		t.Errorf("step-up scope = %q, want read and write", got)
	}

	// A server that keeps asking for scope already granted: no loop.
	f2 := newAuthFixture(t)
	f2.scopeInHeader = "read"
	f2.callScopes = []string{"admin"}
	f2.neverEnough = true
	g2 := newGateway(t, f2.config("docs"), &Options{Browser: mcpauth.FetchBrowser{}})
	_, err := whoami(t, g2, "alice")
	if err == nil {
		t.Fatal("want an error from a server that never accepts the scope")
	}
	if n := len(f2.authRequests()); n > 3 {
		t.Errorf("authorization requests = %d, want at most 3", n)
	}
}

func TestOAuthPerUserIsolation(t *testing.T) {
	t.Parallel()
	f := newAuthFixture(t)
	store := &mcpauth.MemoryTokenStore{}
	cfg := f.config("docs")
	g := newGateway(t, cfg, &Options{Tokens: store})
	// Alice signs in (as the CLI's login does); Bob does not.
	if err := g.SignIn(t.Context(), "alice", mcpauth.FetchBrowser{}); err != nil {
		t.Fatalf("SignIn: %v", err)
	}
	got, err := whoami(t, g, "alice")
	if err != nil || got != "subject-1" {
		t.Fatalf("alice: %q, %v", got, err)
	}
	_, err = whoami(t, g, "bob")
	var sr *mcpauth.SignInRequiredError
	if !errors.As(err, &sr) || sr.User != "bob" {
		t.Fatalf("bob: err = %v, want bob to sign in", err)
	}
	if st := g.StatusFor(t.Context(), "bob"); st.State != session.StateNeedsSignIn {
		t.Errorf("bob's state = %s, want needs_sign_in", st.State)
	}
	if st := g.StatusFor(t.Context(), "alice"); st.State != session.StateConnected {
		t.Errorf("alice's state = %s, want connected", st.State)
	}
	res, err := g.Run(t.Context(), tools.Call{UserID: "bob", Args: map[string]any{"action": "execute", "tool_name": "whoami"}}, tools.Discard)
	if err != nil || !res.IsError || !strings.Contains(res.Feedback, "sign in") || !strings.Contains(res.Error, `user "bob" must sign in`) {
		t.Errorf("Run for bob = %+v, %v; want a self-healing sign-in message", res, err)
	}
	// Bob signs in: his own token, his own subject.
	if err := g.SignIn(t.Context(), "bob", mcpauth.FetchBrowser{}); err != nil {
		t.Fatalf("SignIn bob: %v", err)
	}
	if got, _ := whoami(t, g, "bob"); got != "subject-2" {
		t.Errorf("bob = %q, want subject-2", got)
	}
	if got, _ := whoami(t, g, "alice"); got != "subject-1" {
		t.Errorf("alice after bob = %q, want subject-1", got)
	}
	// Sign-out forgets only alice.
	if err := g.SignOut(t.Context(), "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := whoami(t, g, "alice"); !errors.Is(err, mcpauth.ErrSignInRequired) {
		t.Errorf("alice after sign-out: %v, want ErrSignInRequired", err)
	}
	if got, _ := whoami(t, g, "bob"); got != "subject-2" {
		t.Errorf("bob after alice's sign-out = %q", got)
	}
}

func TestOAuthWebSignInState(t *testing.T) {
	t.Parallel()
	f := newAuthFixture(t)
	g := newGateway(t, f.config("docs"), nil)
	authURL, err := g.StartSignIn(t.Context(), "alice", "https://elysia.example/oauth/callback/docs", "")
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(authURL)
	state := u.Query().Get("state")
	if err := g.FinishSignIn(t.Context(), "bob", state, "code-x", ""); !errors.Is(err, mcpauth.ErrUnknownState) {
		t.Errorf("bob finishing alice's sign-in: %v, want ErrUnknownState", err)
	}
	// The state was spent by the attempt: alice cannot replay it either.
	if err := g.FinishSignIn(t.Context(), "alice", state, "code-x", ""); !errors.Is(err, mcpauth.ErrUnknownState) {
		t.Errorf("replayed state: %v, want ErrUnknownState", err)
	}
}

// TestOAuthIssAndCallbackPath signs in through an authorization server
// that sends iss (RFC 9207) on the loopback redirect of this server's own
// path, CallbackPath: one redirect URI per server.
func TestOAuthIssAndCallbackPath(t *testing.T) {
	t.Parallel()
	f := newAuthFixture(t)
	f.issSupported, f.iss = true, f.as.URL
	g := newGateway(t, f.config("docs"), &Options{Browser: mcpauth.FetchBrowser{}})
	if got, err := whoami(t, g, "alice"); err != nil || got != "subject-1" {
		t.Fatalf("whoami = %q, %v; want subject-1", got, err)
	}
	ar := f.authRequests()
	if len(ar) != 1 {
		t.Fatalf("authorization requests = %d, want 1", len(ar))
	}
	u, err := url.Parse(ar[0].Get("redirect_uri"))
	if err != nil || u.Path != "/oauth/callback/docs" || u.Hostname() != "127.0.0.1" {
		t.Errorf("redirect_uri = %q, want http://127.0.0.1:<port>/oauth/callback/docs", ar[0].Get("redirect_uri"))
	}
}

// TestOAuthPendingSignInCaps starts web sign-ins until the per-user cap:
// the next start is refused with ErrTooManySignIns before it registers a
// client, another user may still start, and an expired sign-in makes room.
func TestOAuthPendingSignInCaps(t *testing.T) {
	t.Parallel()
	f := newAuthFixture(t)
	pending := &mcpauth.MemoryPendingSignIns{}
	g := newGateway(t, f.config("docs"), &Options{Pending: pending})
	start := func(user string) error {
		_, err := g.StartSignIn(t.Context(), user, "https://elysia.example/oauth/callback/docs", "")
		return err
	}
	for i := range mcpauth.MaxPendingSignInsPerUser {
		if err := start("alice"); err != nil {
			t.Fatalf("start %d: %v", i+1, err)
		}
	}
	registered := countPaths(f.requests(), "AS POST /register")
	err := start("alice")
	if !errors.Is(err, mcpauth.ErrTooManySignIns) || !strings.Contains(err.Error(), `user "alice" has 10 sign-ins waiting`) {
		t.Fatalf("start beyond the cap: %v, want ErrTooManySignIns naming alice", err)
	}
	if got := countPaths(f.requests(), "AS POST /register"); got != registered {
		t.Errorf("a refused start registered a client (%d registrations, was %d)", got, registered)
	}
	if err := start("bob"); err != nil {
		t.Errorf("bob's start with alice at her cap: %v", err)
	}
	// One of alice's expires: room for one more.
	pending.ExpireOne("alice")
	if err := start("alice"); err != nil {
		t.Errorf("start after one of alice's expired: %v", err)
	}
}

func countPaths(paths []string, want string) int {
	n := 0
	for _, p := range paths {
		if p == want {
			n++
		}
	}
	return n
}

func TestOAuthClientCredentialsJWT(t *testing.T) {
	t.Parallel()
	f := newAuthFixture(t)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	f.ecKey = &key.PublicKey
	cfg := f.config("svc")
	cfg.OAuth = &mcpconfig.OAuthConfig{Grant: mcpconfig.GrantClientCredentials, ClientID: "svc-client",
		PrivateKey: string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))}
	g := newGateway(t, cfg, nil)
	if got, err := whoami(t, g, ""); err != nil || got != "service" {
		t.Fatalf("whoami = %q, %v; want service", got, err)
	}
	tr := f.tokenRequests()
	if len(tr) != 1 || tr[0].Get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" || tr[0].Get("resource") == "" {
		t.Errorf("token requests = %v", tr)
	}
}

func TestOAuthConfigParses(t *testing.T) {
	t.Parallel()
	cfg, err := mcpconfig.Parse("mcp.json", []byte(`{"servers": {"docs": {"type": "http", "url": "https://docs.example/mcp", "per_user": true,
		"oauth": {"client_id": "abc", "client_secret": "${env:SECRET}", "scopes": ["read"], "grant": "authorization_code",
		"client_auth": "client_secret_post", "redirect_uri": "http://127.0.0.1:8976/callback"}}}}`),
		&mcpconfig.LoadOptions{LookupEnv: func(k string) (string, bool) { return "s3cret", k == "SECRET" }})
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Servers[0]
	want := &mcpconfig.OAuthConfig{ClientID: "abc", ClientSecret: "s3cret", Scopes: []string{"read"}, Grant: "authorization_code",
		ClientAuth: "client_secret_post", RedirectURI: "http://127.0.0.1:8976/callback"}
	if diff := cmp.Diff(want, s.OAuth); diff != "" || !s.PerUser {
		t.Errorf("oauth (-want +got):\n%s per_user=%v", diff, s.PerUser)
	}
	if !slices.Contains(s.Secrets, "s3cret") {
		t.Errorf("client_secret is not a secret: %v", s.Secrets)
	}
	_, err = mcpconfig.Parse("mcp.json", []byte(`{"servers": {"x": {"type": "http", "url": "https://x/mcp", "oauth": {"grant": "password"}}}}`), nil)
	if !errors.Is(err, mcpconfig.ErrInvalidConfig) || !strings.Contains(err.Error(), "oauth.grant") {
		t.Errorf("bad grant: %v", err)
	}
}
