package mcpauth

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// The jwt_bearer and id_jag grants against the fixture's authorization
// server, which verifies each grant's JWT with go-jose (signature, aud,
// exp, and for an ID-JAG its typ, client and resource), and a test
// enterprise IdP that verifies the ID token and answers the token
// exchange: real HTTP servers on 127.0.0.1.

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// signJWT returns an ES256 JWT of claims signed with key, typ in its
// header when not empty.
func signJWT(t *testing.T, key *ecdsa.PrivateKey, typ string, claims map[string]any) string {
	t.Helper()
	s, err := signJWTNoT(key, typ, claims)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// workloadJWT is a platform's token for the workload, for audience aud,
// expiring at exp.
func workloadJWT(t *testing.T, key *ecdsa.PrivateKey, aud string, exp time.Time) string {
	t.Helper()
	return signJWT(t, key, "", map[string]any{"iss": "https://platform.example", "sub": "workload-7",
		"aud": aud, "iat": time.Now().Unix(), "exp": exp.Unix(), "jti": rand.Text()})
}

// logBuffer is a logger that keeps what it writes, to check that no
// secret is in it.
func logBuffer() (*slog.Logger, func() string) {
	var mu sync.Mutex
	var b bytes.Buffer
	w := writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return b.Write(p)
	})
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug})), func() string {
		mu.Lock()
		defer mu.Unlock()
		return b.String()
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// newUnattendedClient is newTestClient for a server whose grant needs no
// user: the shared session's authorizer (Userless, no browser), logging
// into the returned buffer.
func newUnattendedClient(t *testing.T, rs *testRS, o *mcpconfig.OAuthConfig) (*Authorizer, *http.Client, func() string) {
	t.Helper()
	logger, logs := logBuffer()
	cfg := mcpconfig.ServerConfig{Name: "s", Transport: mcpconfig.TransportHTTP, URL: rs.URL + "/mcp", OAuth: o}
	a := NewAuthorizer(cfg, "", &MemoryTokenStore{}, nil, logger)
	a.Userless = true // as the gateway's shared session is; the grant needs no user
	t.Cleanup(a.CloseIdleConnections)
	base := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(base.CloseIdleConnections)
	return a, &http.Client{Transport: NewRoundTripper(base, cfg, a), CheckRedirect: ServerRedirects(cfg.Name), Timeout: 10 * time.Second}, logs
}

// tokenForms returns the form of every token request as got.
func (as *testAS) tokenForms() []url.Values {
	as.mu.Lock()
	defer as.mu.Unlock()
	var out []url.Values
	for _, s := range as.seen {
		if !strings.HasPrefix(s, "POST /token") {
			continue
		}
		form, _ := url.ParseQuery(s[strings.LastIndexByte(s, '\n')+1:])
		out = append(out, form)
	}
	return out
}

// TestJWTBearer is workload identity federation: the workload's JWT, in
// a file, is the jwt-bearer grant (grant_type, assertion, resource, no
// client secret, no registration), read again for each grant so that a
// rotated file is used. The JWT is never in a log.
func TestJWTBearer(t *testing.T) {
	platform := newKey(t)
	as := newTestAS(t, "as")
	as.trusted = &platform.PublicKey
	rs := newTestRS(t, as)
	file := filepath.Join(t.TempDir(), "token")
	first := workloadJWT(t, platform, as.URL, time.Now().Add(time.Hour))
	if err := os.WriteFile(file, []byte(first+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a, c, logs := newUnattendedClient(t, rs, &mcpconfig.OAuthConfig{Grant: mcpconfig.GrantJWTBearer, AssertionFile: file})
	for i := range 2 {
		if err := call(t, c, rs); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	forms := as.tokenForms()
	if len(forms) != 1 {
		t.Fatalf("%d token requests for two calls, want 1", len(forms))
	}
	f := forms[0]
	if f.Get("grant_type") != grantJWTBearer || f.Get("assertion") != first || f.Get("resource") != rs.URL+"/mcp" || f.Has("client_secret") || f.Has("scope") {
		t.Errorf("token request %v; want the jwt-bearer grant of the file's JWT for the resource, no secret, no scope", f)
	}
	if reg, _, _, _, _ := as.counts(); reg != 0 {
		t.Errorf("%d registrations; want none", reg)
	}
	// The platform rotates the file; the server refuses the old token:
	// the grant is made again with the new JWT.
	second := workloadJWT(t, platform, as.URL, time.Now().Add(time.Hour))
	if err := os.WriteFile(file, []byte(second), 0o600); err != nil {
		t.Fatal(err)
	}
	rs.mu.Lock()
	rs.refuseNext = 1
	rs.mu.Unlock()
	if err := call(t, c, rs); err != nil {
		t.Fatalf("call after the token was refused: %v", err)
	}
	forms = as.tokenForms()
	if len(forms) != 2 || forms[1].Get("assertion") != second {
		t.Errorf("%d token requests, the last with the rotated JWT: %v; want 2, true", len(forms), len(forms) == 2 && forms[1].Get("assertion") == second)
	}
	if tok := a.peek(); tok == nil || tok.RefreshToken != "" || tok.Resource != rs.URL+"/mcp" {
		t.Errorf("token %v; want one for the resource, without a refresh token (the grant is repeated)", tok.LogValue())
	}
	for _, jwt := range []string{first, second} {
		if strings.Contains(logs(), jwt) {
			t.Errorf("the log holds the workload's JWT:\n%s", logs())
		}
	}
}

// TestJWTBearerRefused checks what the extension asks of a client whose
// JWT the authorization server refuses: the error is surfaced (the
// server's error code, never the JWT), the same JWT is not sent again and
// no other grant is tried; a new JWT is. A JWT known to have expired, or
// a file that holds no JWT, is not sent at all.
func TestJWTBearerRefused(t *testing.T) {
	platform := newKey(t)
	as := newTestAS(t, "as")
	as.trusted = &platform.PublicKey
	rs := newTestRS(t, as)
	file := filepath.Join(t.TempDir(), "token")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	wrong := workloadJWT(t, platform, "https://wrong.example", time.Now().Add(time.Hour))
	write(wrong)
	_, c, logs := newUnattendedClient(t, rs, &mcpconfig.OAuthConfig{Grant: mcpconfig.GrantJWTBearer, AssertionFile: file})
	for i := range 2 {
		err := call(t, c, rs)
		if err == nil || !strings.Contains(err.Error(), "invalid_grant") || strings.Contains(err.Error(), wrong) {
			t.Fatalf("call %d with a JWT for another audience: err = %v; want invalid_grant, without the JWT", i, err)
		}
		if i == 1 && !strings.Contains(err.Error(), "refused before") {
			t.Errorf("second call: err = %v; want it to say the JWT was refused before", err)
		}
	}
	forms := as.tokenForms()
	if len(forms) != 1 || forms[0].Get("grant_type") != grantJWTBearer {
		t.Fatalf("token requests %v; want one jwt-bearer grant, not repeated, no other grant", forms)
	}
	as.mu.Lock()
	why := strings.Join(as.grantErrs, "; ")
	as.mu.Unlock()
	if !strings.Contains(why, "aud") {
		t.Errorf("the server refused the grant for %q; want its audience", why)
	}

	for _, bad := range []struct{ name, content, want string }{
		{"expired", workloadJWT(t, platform, as.URL, time.Now().Add(-time.Hour)), "expired at"},
		{"not a JWT", "ghp_not-a-jwt-at-all", "not a JWT"},
		{"unsigned", "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.", "not a JWT"},
		{"empty", "\n", "is empty"},
	} {
		write(bad.content)
		err := call(t, c, rs)
		if err == nil || !strings.Contains(err.Error(), bad.want) || !strings.Contains(err.Error(), file) ||
			(strings.TrimSpace(bad.content) != "" && strings.Contains(err.Error(), strings.TrimSpace(bad.content))) {
			t.Errorf("%s file: err = %v; want %q naming the file, not its contents", bad.name, err, bad.want)
		}
	}
	if n := len(as.tokenForms()); n != 1 {
		t.Errorf("%d token requests after the bad files; want still 1", n)
	}

	// A server that quotes the JWT it refuses: the error masks it.
	as.mu.Lock()
	as.describe = func(f url.Values) string { return "bad assertion " + f.Get("assertion") }
	as.mu.Unlock()
	short := signJWT(t, platform, "", map[string]any{"aud": "x"}) // short enough to be quoted
	write(short)
	if err := call(t, c, rs); err == nil || !strings.Contains(err.Error(), "bad assertion ***") || strings.Contains(err.Error(), short) {
		t.Errorf("refusal quoting the JWT: err = %v; want it masked", err)
	}

	good := workloadJWT(t, platform, as.URL, time.Now().Add(time.Hour))
	write(good)
	if err := call(t, c, rs); err != nil {
		t.Fatalf("call with a new, good JWT: %v", err)
	}
	if strings.Contains(logs(), wrong) || strings.Contains(logs(), good) {
		t.Errorf("the log holds a JWT:\n%s", logs())
	}
}

// testIdP is an enterprise IdP's token endpoint for the token exchange of
// enterprise-managed authorization: it takes an ID token it issued to its
// client (aud) and returns an ID-JAG for the audience and resource asked
// for, naming the client at the MCP server's authorization server, signed
// with jagKey (which that server trusts).
type testIdP struct {
	*httptest.Server
	idKey, jagKey    *ecdsa.PrivateKey
	clientID, secret string // the MCP client at the IdP; secret "": a public client
	asClient         string // the client at the MCP server's authorization server
	issuedType       string // issued_token_type of its answers; "" means the ID-JAG's

	mu        sync.Mutex // guards the fields below
	exchanges []url.Values
	errs      []string
}

func newTestIdP(t *testing.T, asClient string) *testIdP {
	t.Helper()
	idp := &testIdP{idKey: newKey(t), jagKey: newKey(t), clientID: "idp-client", asClient: asClient}
	idp.Server = httptest.NewServer(http.HandlerFunc(idp.serve))
	t.Cleanup(idp.Close)
	return idp
}

// idToken is the ID token single sign-on gave the client, for aud.
func (idp *testIdP) idToken(t *testing.T, aud string) string {
	t.Helper()
	return signJWT(t, idp.idKey, "", map[string]any{"iss": idp.URL, "sub": "alice@example.com", "aud": aud,
		"iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix()})
}

func (idp *testIdP) serve(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/.well-known/openid-configuration":
		writeJSON(w, map[string]any{"issuer": idp.URL, "token_endpoint": idp.URL + "/oauth2/token",
			"grant_types_supported": []string{grantTokenExchange}})
	case "/oauth2/token":
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<16))
		form, _ := url.ParseQuery(string(body))
		idp.mu.Lock()
		idp.exchanges = append(idp.exchanges, form)
		idp.mu.Unlock()
		jag, err := idp.exchange(r, form)
		if err != nil {
			idp.mu.Lock()
			idp.errs = append(idp.errs, err.Error())
			idp.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":"invalid_grant","error_description":"Audience validation failed"}`)
			return
		}
		typ := idp.issuedType
		if typ == "" {
			typ = tokenTypeIDJAG
		}
		writeJSON(w, map[string]any{"issued_token_type": typ, "access_token": jag, "token_type": "N_A", "expires_in": 300})
	default:
		http.NotFound(w, r)
	}
}

// exchange checks a token exchange as §4 and §4.1 of the extension say
// and returns the ID-JAG.
func (idp *testIdP) exchange(r *http.Request, form url.Values) (string, error) {
	client := form.Get("client_id")
	if id, secret, ok := r.BasicAuth(); ok {
		client = id
		if secret != idp.secret {
			return "", errors.New("wrong client secret")
		}
	} else if idp.secret != "" {
		return "", errors.New("the client did not authenticate")
	}
	for k, want := range map[string]string{"grant_type": grantTokenExchange, "requested_token_type": tokenTypeIDJAG,
		"subject_token_type": tokenTypeIDToken} {
		if form.Get(k) != want {
			return "", fmt.Errorf("%s %q, want %q", k, form.Get(k), want)
		}
	}
	if form.Get("audience") == "" || form.Get("resource") == "" {
		return "", errors.New("no audience or resource")
	}
	jws, err := jose.ParseSignedCompact(form.Get("subject_token"), []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		return "", fmt.Errorf("subject token: %v", err)
	}
	payload, err := jws.Verify(&idp.idKey.PublicKey)
	if err != nil {
		return "", fmt.Errorf("subject token signature: %v", err)
	}
	var c struct {
		Sub, Aud string
	}
	_ = json.Unmarshal(payload, &c)
	if c.Aud != idp.clientID || client != idp.clientID {
		return "", fmt.Errorf("the ID token is for %q, the client is %q", c.Aud, client)
	}
	claims := map[string]any{"iss": idp.URL, "sub": c.Sub, "aud": form.Get("audience"), "resource": form.Get("resource"),
		"client_id": idp.asClient, "jti": rand.Text(), "iat": time.Now().Unix(), "exp": time.Now().Add(5 * time.Minute).Unix()}
	if s := form.Get("scope"); s != "" {
		claims["scope"] = s
	}
	return signJWTNoT(idp.jagKey, "oauth-id-jag+jwt", claims)
}

// signJWTNoT is signJWT for a server's handler, which has no *testing.T
// to fail.
func signJWTNoT(key *ecdsa.PrivateKey, typ string, claims map[string]any) (string, error) {
	opts := &jose.SignerOptions{}
	if typ != "" {
		opts = opts.WithType(jose.ContentType(typ))
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, opts)
	if err != nil {
		return "", err
	}
	payload, _ := json.Marshal(claims)
	jws, err := signer.Sign(payload)
	if err != nil {
		return "", err
	}
	return jws.CompactSerialize()
}

// TestIDJAG is enterprise-managed authorization: the ID token is
// exchanged at the IdP (found from its issuer, or its token endpoint as
// configured, with the client's secret there when it has one) for an
// ID-JAG naming the authorization server and the resource, which the
// client presents there as the jwt-bearer grant with its own credentials.
// Neither the ID token nor the ID-JAG is in a log.
func TestIDJAG(t *testing.T) {
	for _, tt := range []struct {
		name     string
		discover bool   // find the IdP's token endpoint from its issuer
		secret   string // the client's secret at the IdP
	}{
		{name: "issuer discovery, public client", discover: true},
		{name: "configured token endpoint, client secret", secret: "idp-secret"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			as := newTestAS(t, "as")
			as.secrets, as.authMethods = map[string]string{"mcp-client": "mcp-secret"}, []string{"client_secret_basic"}
			idp := newTestIdP(t, "mcp-client")
			idp.secret = tt.secret
			as.trusted = &idp.jagKey.PublicKey
			rs := newTestRS(t, as)
			idToken := idp.idToken(t, idp.clientID)
			o := &mcpconfig.OAuthConfig{Grant: mcpconfig.GrantIDJAG, ClientID: "mcp-client", ClientSecret: "mcp-secret",
				IDToken: idToken, IdPClientID: idp.clientID, IdPClientSecret: tt.secret, Scopes: []string{"chat.read"}}
			if tt.discover {
				o.IdPIssuer = idp.URL
			} else {
				o.IdPTokenEndpoint = idp.URL + "/oauth2/token"
			}
			_, c, logs := newUnattendedClient(t, rs, o)
			for i := range 2 {
				if err := call(t, c, rs); err != nil {
					idp.mu.Lock()
					as.mu.Lock()
					t.Fatalf("call %d: %v (IdP refused: %q; server refused: %q)", i, err, idp.errs, as.grantErrs)
				}
			}
			idp.mu.Lock()
			exchanges := idp.exchanges
			idp.mu.Unlock()
			if len(exchanges) != 1 {
				t.Fatalf("%d token exchanges for two calls; want 1", len(exchanges))
			}
			x := exchanges[0]
			if x.Get("audience") != as.URL || x.Get("resource") != rs.URL+"/mcp" || x.Get("scope") != "chat.read" || x.Get("subject_token") != idToken {
				t.Errorf("token exchange %v; want audience %s, resource %s, scope chat.read, the ID token", x, as.URL, rs.URL+"/mcp")
			}
			if tt.secret != "" && x.Has("client_secret") {
				t.Errorf("the IdP secret went in the body; want client_secret_basic")
			}
			forms := as.tokenForms()
			if len(forms) != 1 || forms[0].Get("grant_type") != grantJWTBearer || forms[0].Get("resource") != rs.URL+"/mcp" {
				t.Fatalf("token requests at the authorization server %v; want one jwt-bearer grant for the resource", forms)
			}
			jag := forms[0].Get("assertion")
			rs.mu.Lock()
			last := rs.authSeen[len(rs.authSeen)-1]
			rs.mu.Unlock()
			if g, ok := as.lookup(strings.TrimPrefix(last, "Bearer ")); !ok || g.client != "mcp-client" {
				t.Errorf("the token in use is the grant of %q; want mcp-client's", g.client)
			}
			for _, secret := range []string{idToken, jag, "mcp-secret"} {
				if strings.Contains(logs(), secret) {
					t.Errorf("the log holds a secret:\n%s", logs())
				}
			}
		})
	}
}

// TestIDJAGRefused: an IdP that refuses the exchange (an ID token issued
// to another client) stops the flow before the authorization server, and
// is not asked again with the same ID token; an IdP whose answer is not
// an ID-JAG is an error, not a grant.
func TestIDJAGRefused(t *testing.T) {
	as := newTestAS(t, "as")
	as.secrets, as.authMethods = map[string]string{"mcp-client": "mcp-secret"}, []string{"client_secret_basic"}
	idp := newTestIdP(t, "mcp-client")
	as.trusted = &idp.jagKey.PublicKey
	rs := newTestRS(t, as)
	stolen := idp.idToken(t, "another-client")
	o := &mcpconfig.OAuthConfig{Grant: mcpconfig.GrantIDJAG, ClientID: "mcp-client", ClientSecret: "mcp-secret",
		IDToken: stolen, IdPClientID: idp.clientID, IdPIssuer: idp.URL}
	_, c, _ := newUnattendedClient(t, rs, o)
	for i := range 2 {
		err := call(t, c, rs)
		if err == nil || !strings.Contains(err.Error(), "invalid_grant") || strings.Contains(err.Error(), stolen) {
			t.Fatalf("call %d with an ID token for another client: err = %v; want invalid_grant, without the token", i, err)
		}
	}
	idp.mu.Lock()
	n := len(idp.exchanges)
	idp.mu.Unlock()
	if n != 1 || len(as.tokenForms()) != 0 {
		t.Errorf("%d exchanges at the IdP, %d token requests at the server; want 1, 0", n, len(as.tokenForms()))
	}

	idp.issuedType = "urn:ietf:params:oauth:token-type:access_token"
	o2 := *o
	o2.IDToken = idp.idToken(t, idp.clientID)
	_, c2, _ := newUnattendedClient(t, rs, &o2)
	if err := call(t, c2, rs); err == nil || !strings.Contains(err.Error(), "not an ID-JAG") {
		t.Errorf("IdP answering an access token: err = %v; want one saying it is not an ID-JAG", err)
	}
	if len(as.tokenForms()) != 0 {
		t.Errorf("a token request reached the server with what is not an ID-JAG")
	}
}

// TestUnattendedHasNoSignIn: a server whose grant needs no user has no
// web sign-in to start, and a terminal sign-in gets the token by the grant.
func TestUnattendedHasNoSignIn(t *testing.T) {
	platform := newKey(t)
	as := newTestAS(t, "as")
	as.trusted = &platform.PublicKey
	rs := newTestRS(t, as)
	o := &mcpconfig.OAuthConfig{Grant: mcpconfig.GrantJWTBearer, Assertion: workloadJWT(t, platform, as.URL, time.Now().Add(time.Hour))}
	a, _ := newTestClient(t, rs, &MemoryTokenStore{}, o)
	if _, _, err := a.Begin(t.Context(), nil, nil, "https://elysia.example/oauth/callback/s"); err == nil || !strings.Contains(err.Error(), "no sign-in") {
		t.Errorf("Begin: err = %v; want no sign-in to start", err)
	}
	tok, err := a.SignInLoopback(t.Context(), nil, nil, FetchBrowser{})
	if err != nil || tok == nil {
		t.Fatalf("SignInLoopback: %v", err)
	}
	if forms := as.tokenForms(); len(forms) != 1 || forms[0].Get("grant_type") != grantJWTBearer {
		t.Errorf("token requests %v; want the jwt-bearer grant", forms)
	}
}
