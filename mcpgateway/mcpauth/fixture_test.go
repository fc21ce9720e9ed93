package mcpauth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// The fixture of the 2026-07-28 authorization tests: an authorization
// server (testAS) and an MCP server's protected resource (testRS), real
// HTTP servers on 127.0.0.1. The authorization server registers clients,
// approves every sign-in at once (so FetchBrowser completes it), checks
// PKCE and the client at its token endpoint, and binds tokens to the key
// of a DPoP proof, which it verifies as RFC 9449 §4.3 says; the resource
// takes the live tokens of the authorization server its metadata names
// now, verifying the DPoP proof of a bound one. Proofs are verified with
// go-jose, an implementation independent of the signer under test.

// testGrant is what a code or token was issued for.
type testGrant struct {
	client, challenge, redirect, resource string
	jkt                                   string // the DPoP key it is bound to; "" for Bearer
}

type testAS struct {
	*httptest.Server
	name string

	// Settings, made before the first request.
	issuer   string               // the issuer its metadata names; "" means its URL
	issParam bool                 // metadata: authorization_response_iss_parameter_supported
	iss      func(string) string  // the iss of its answers from the issuer; nil means the issuer
	dpopAlgs []string             // metadata: dpop_signing_alg_values_supported; nil: no DPoP
	nonce    bool                 // token requests need its DPoP nonce (RFC 9449 §8)
	newNonce bool                 // asks for a new nonce every time: it never settles
	answer   func(url.Values)     // changes the answer of /authorize before it goes
	refuse   func(url.Values) int // a status for a token request to refuse; 0 to go on
	// trusted verifies the JWTs it takes as jwt-bearer grants (a
	// workload's, or an IdP's ID-JAG); nil: it takes none.
	trusted *ecdsa.PublicKey
	// secrets are its confidential clients (id → secret), which
	// authenticate with client_secret_basic; authMethods, when set, is
	// its token_endpoint_auth_methods_supported (else none).
	secrets     map[string]string
	authMethods []string
	// describe, when set, is the error_description of its refusals.
	describe func(url.Values) string

	mu              sync.Mutex // guards the fields below
	n               int
	clients         map[string]string    // client id → redirect URI, or "*" for any
	codes           map[string]testGrant // by code
	access          map[string]testGrant // live access tokens
	refresh         map[string]testGrant // live refresh tokens
	seen            []string             // every request, as text
	registrations   int
	tokenRequests   int
	dpopProofs      int // token requests that carried a DPoP proof
	nonceChallenges int
	proofErrs       []string
	jtis            map[string]bool
	nonceVal        string
	grantErrs       []string // why jwt-bearer grants were refused
}

func newTestAS(t *testing.T, name string) *testAS {
	t.Helper()
	as := &testAS{name: name, clients: map[string]string{}, codes: map[string]testGrant{},
		access: map[string]testGrant{}, refresh: map[string]testGrant{}, jtis: map[string]bool{}}
	as.Server = httptest.NewServer(http.HandlerFunc(as.serve))
	t.Cleanup(as.Close)
	return as
}

// issuerName is the issuer as its metadata spells it.
func (as *testAS) issuerName() string {
	if as.issuer != "" {
		return as.issuer
	}
	return as.URL
}

// lookup returns the grant of a live access token.
func (as *testAS) lookup(tok string) (testGrant, bool) {
	as.mu.Lock()
	defer as.mu.Unlock()
	g, ok := as.access[tok]
	return g, ok
}

// saw returns every request so far, as text.
func (as *testAS) saw() string {
	as.mu.Lock()
	defer as.mu.Unlock()
	return strings.Join(as.seen, "\n")
}

func (as *testAS) counts() (registrations, tokenRequests, dpopProofs, nonceChallenges int, proofErrs []string) {
	as.mu.Lock()
	defer as.mu.Unlock()
	return as.registrations, as.tokenRequests, as.dpopProofs, as.nonceChallenges, slices.Clone(as.proofErrs)
}

func (as *testAS) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<16))
	as.mu.Lock()
	as.seen = append(as.seen, fmt.Sprintf("%s %s\nAuthorization: %s\nDPoP: %s\n%s", r.Method, r.URL,
		r.Header.Get("Authorization"), r.Header.Get("DPoP"), body))
	as.mu.Unlock()
	switch r.URL.Path {
	case "/.well-known/oauth-authorization-server":
		meta := map[string]any{
			"issuer": as.issuerName(), "authorization_endpoint": as.URL + "/authorize", "token_endpoint": as.URL + "/token",
			"registration_endpoint": as.URL + "/register", "code_challenge_methods_supported": []string{"S256"},
			"token_endpoint_auth_methods_supported": []string{"none"},
		}
		if as.authMethods != nil {
			meta["token_endpoint_auth_methods_supported"] = as.authMethods
		}
		if as.trusted != nil {
			meta["grant_types_supported"] = []string{grantJWTBearer}
		}
		if as.issParam {
			meta["authorization_response_iss_parameter_supported"] = true
		}
		if as.dpopAlgs != nil {
			meta["dpop_signing_alg_values_supported"] = as.dpopAlgs
		}
		writeJSON(w, meta)
	case "/register":
		var req struct {
			RedirectURIs []string `json:"redirect_uris"`
		}
		if json.Unmarshal(body, &req) != nil || len(req.RedirectURIs) != 1 {
			http.Error(w, `{"error":"invalid_client_metadata"}`, http.StatusBadRequest)
			return
		}
		as.mu.Lock()
		as.registrations++
		id := fmt.Sprintf("%s-client-%d", as.name, as.registrations)
		as.clients[id] = req.RedirectURIs[0]
		as.mu.Unlock()
		writeJSON(w, map[string]any{"client_id": id, "token_endpoint_auth_method": "none"})
	case "/authorize":
		as.authorize(w, r)
	case "/token":
		as.token(w, r, body)
	default:
		http.NotFound(w, r)
	}
}

func (as *testAS) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	as.mu.Lock()
	redirect, ok := as.clients[q.Get("client_id")]
	if redirect == "*" { // pre-registered for any loopback redirect
		redirect = q.Get("redirect_uri")
	}
	if !ok || redirect != q.Get("redirect_uri") || q.Get("code_challenge_method") != "S256" {
		as.mu.Unlock()
		http.Error(w, "unknown client, redirect uri or challenge", http.StatusBadRequest)
		return
	}
	as.n++
	code := fmt.Sprintf("%s-code-%d", as.name, as.n)
	as.codes[code] = testGrant{client: q.Get("client_id"), challenge: q.Get("code_challenge"), redirect: redirect, resource: q.Get("resource")}
	as.mu.Unlock()
	to, _ := url.Parse(redirect)
	v := url.Values{"code": {code}, "state": {q.Get("state")}}
	iss := as.issuerName()
	if as.iss != nil {
		iss = as.iss(iss)
	}
	if iss != "" {
		v.Set("iss", iss)
	}
	if as.answer != nil {
		as.answer(v)
	}
	to.RawQuery = v.Encode()
	http.Redirect(w, r, to.String(), http.StatusFound)
}

func (as *testAS) token(w http.ResponseWriter, r *http.Request, body []byte) {
	form, _ := url.ParseQuery(string(body))
	fail := func(status int, code string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		desc := ""
		if as.describe != nil {
			desc = as.describe(form)
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": desc})
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	as.tokenRequests++
	if as.refuse != nil {
		if status := as.refuse(form); status != 0 {
			fail(status, "invalid_grant")
			return
		}
	}
	// The DPoP proof, when the server does DPoP (RFC 9449 §5).
	jkt := ""
	if proof := r.Header.Values("DPoP"); as.dpopAlgs != nil && len(proof) > 0 {
		as.dpopProofs++
		var err error
		want := as.nonceVal
		if as.nonce && want == "" {
			want = "unset" // no proof carries it: the first is asked for one
		}
		jkt, err = verifyProof(r, as.URL+"/token", "", want, as.jtis)
		if as.newNonce && err == nil {
			err = errWantNonce
		}
		switch {
		case errors.Is(err, errWantNonce) && as.nonce:
			as.nonceChallenges++
			if as.nonceVal == "" || as.newNonce { // a nonce stays good until it is replaced
				as.nonceVal = fmt.Sprintf("%s-nonce-%d", as.name, as.nonceChallenges)
			}
			w.Header().Set("DPoP-Nonce", as.nonceVal)
			fail(http.StatusBadRequest, "use_dpop_nonce")
			return
		case err != nil && !errors.Is(err, errWantNonce):
			as.proofErrs = append(as.proofErrs, err.Error())
			fail(http.StatusBadRequest, "invalid_dpop_proof")
			return
		}
	}
	var g testGrant
	switch form.Get("grant_type") {
	case "authorization_code":
		c, ok := as.codes[form.Get("code")]
		delete(as.codes, form.Get("code"))
		sum := sha256.Sum256([]byte(form.Get("code_verifier")))
		switch {
		case !ok || c.client != form.Get("client_id") || c.redirect != form.Get("redirect_uri"):
			fail(http.StatusBadRequest, "invalid_grant")
			return
		case base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge:
			fail(http.StatusBadRequest, "invalid_grant")
			return
		}
		g = c
	case "refresh_token":
		old, ok := as.refresh[form.Get("refresh_token")]
		if !ok || old.client != form.Get("client_id") || old.jkt != jkt {
			// A bound refresh token needs a proof of its key (§5).
			fail(http.StatusBadRequest, "invalid_grant")
			return
		}
		delete(as.refresh, form.Get("refresh_token"))
		g = old
	case grantJWTBearer:
		var err error
		if g, err = as.verifyGrant(r, form); err != nil {
			as.grantErrs = append(as.grantErrs, err.Error())
			fail(http.StatusBadRequest, "invalid_grant")
			return
		}
	default:
		fail(http.StatusBadRequest, "unsupported_grant_type")
		return
	}
	g.jkt = jkt
	as.n++
	access, refresh := fmt.Sprintf("%s-access-%d", as.name, as.n), fmt.Sprintf("%s-refresh-%d", as.name, as.n)
	as.access[access], as.refresh[refresh] = g, g
	typ := "Bearer"
	if jkt != "" {
		typ = "DPoP"
	}
	writeJSON(w, map[string]any{"access_token": access, "token_type": typ, "expires_in": 3600, "refresh_token": refresh})
}

// verifyGrant checks the assertion of a jwt-bearer grant (RFC 7523 §3):
// an ES256 JWT signed with the trusted key, for this authorization server
// (aud), not expired. An ID-JAG (typ oauth-id-jag+jwt) must also name the
// client that authenticates (client_secret_basic) and the resource asked
// for (the enterprise-managed authorization extension, §5.1); any other
// JWT is a workload's, its subject the client.
func (as *testAS) verifyGrant(r *http.Request, form url.Values) (testGrant, error) {
	if as.trusted == nil {
		return testGrant{}, errors.New("no jwt-bearer grants here")
	}
	jws, err := jose.ParseSignedCompact(form.Get("assertion"), []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		return testGrant{}, fmt.Errorf("assertion: %v", err)
	}
	payload, err := jws.Verify(as.trusted)
	if err != nil {
		return testGrant{}, fmt.Errorf("assertion signature: %v", err)
	}
	var c struct {
		Sub      string `json:"sub"`
		Aud      string `json:"aud"`
		Exp      int64  `json:"exp"`
		ClientID string `json:"client_id"`
		Resource string `json:"resource"`
	}
	if err := json.Unmarshal(payload, &c); err != nil {
		return testGrant{}, fmt.Errorf("assertion claims: %v", err)
	}
	switch {
	case c.Aud != as.issuerName():
		return testGrant{}, fmt.Errorf("aud %q, want %q", c.Aud, as.issuerName())
	case time.Now().After(time.Unix(c.Exp, 0)):
		return testGrant{}, errors.New("expired")
	case form.Get("resource") == "":
		return testGrant{}, errors.New("no resource")
	}
	typ, _ := jws.Signatures[0].Protected.ExtraHeaders[jose.HeaderType].(string)
	if typ != "oauth-id-jag+jwt" {
		return testGrant{client: c.Sub, resource: form.Get("resource")}, nil
	}
	id, secret, ok := r.BasicAuth()
	switch {
	case !ok || as.secrets[id] == "" || as.secrets[id] != secret:
		return testGrant{}, errors.New("the ID-JAG's client did not authenticate")
	case c.ClientID != id:
		return testGrant{}, fmt.Errorf("ID-JAG client_id %q, the client is %q", c.ClientID, id)
	case c.Resource != form.Get("resource"):
		return testGrant{}, fmt.Errorf("ID-JAG resource %q, asked for %q", c.Resource, form.Get("resource"))
	}
	return testGrant{client: id, resource: c.Resource}, nil
}

// errWantNonce is verifyProof's error for a proof without the nonce the
// server asks for.
var errWantNonce = errors.New("the proof lacks the server's nonce")

// verifyProof checks the one DPoP proof of r as RFC 9449 §4.3 says: typ
// dpop+jwt, ES256, a public jwk whose key verifies the signature, the
// method (htm) and wantHTU (htu) of r, iat within a minute, a jti not in
// jtis (which it adds), the hash of accessToken (ath) when given, and
// nonce when not empty (errWantNonce when it is missing or another). It
// returns the key's RFC 7638 thumbprint (the jkt a token is bound to).
func verifyProof(r *http.Request, wantHTU, accessToken, nonce string, jtis map[string]bool) (string, error) {
	proofs := r.Header.Values("DPoP")
	if len(proofs) != 1 {
		return "", fmt.Errorf("%d DPoP headers, want 1", len(proofs))
	}
	jws, err := jose.ParseSignedCompact(proofs[0], []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		return "", fmt.Errorf("proof: %v", err)
	}
	h := jws.Signatures[0].Protected
	if typ, _ := h.ExtraHeaders[jose.HeaderType].(string); typ != "dpop+jwt" {
		return "", fmt.Errorf("proof typ %q, want dpop+jwt", typ)
	}
	if h.JSONWebKey == nil || !h.JSONWebKey.IsPublic() || !h.JSONWebKey.Valid() {
		return "", errors.New("proof has no public jwk")
	}
	payload, err := jws.Verify(h.JSONWebKey)
	if err != nil {
		return "", fmt.Errorf("proof signature: %v", err)
	}
	var c struct {
		JTI   string `json:"jti"`
		HTM   string `json:"htm"`
		HTU   string `json:"htu"`
		IAT   int64  `json:"iat"`
		ATH   string `json:"ath"`
		Nonce string `json:"nonce"`
	}
	if err := json.Unmarshal(payload, &c); err != nil {
		return "", fmt.Errorf("proof claims: %v", err)
	}
	sum := sha256.Sum256([]byte(accessToken))
	switch {
	case c.HTM != r.Method:
		return "", fmt.Errorf("htm %q, want %q", c.HTM, r.Method)
	case c.HTU != wantHTU:
		return "", fmt.Errorf("htu %q, want %q", c.HTU, wantHTU)
	case time.Since(time.Unix(c.IAT, 0)).Abs() > time.Minute:
		return "", fmt.Errorf("iat %d is not now", c.IAT)
	case c.JTI == "" || jtis[c.JTI]:
		return "", fmt.Errorf("jti %q is empty or used before", c.JTI)
	case accessToken != "" && c.ATH != base64.RawURLEncoding.EncodeToString(sum[:]):
		return "", errors.New("ath is not the hash of the access token")
	case accessToken == "" && c.ATH != "":
		return "", errors.New("ath in a token request's proof")
	}
	jtis[c.JTI] = true
	tp, err := h.JSONWebKey.Thumbprint(crypto.SHA256)
	if err != nil {
		return "", err
	}
	if nonce != "" && c.Nonce != nonce {
		return "", errWantNonce
	}
	return base64.RawURLEncoding.EncodeToString(tp), nil
}

// testRS is the protected resource of an MCP server at /mcp.
type testRS struct {
	*httptest.Server

	mu            sync.Mutex // guards the fields below
	as            *testAS    // the authorization server it names and takes tokens of
	asName        string     // how its metadata spells as; "" means as.issuerName()
	dpopChallenge bool       // its 401s offer DPoP (RFC 9449 §7.1)
	dpopRequired  bool       // metadata: dpop_bound_access_tokens_required; no Bearer 401 challenge
	nonce         bool       // requests need its DPoP nonce (§9)
	newNonce      bool       // asks for a new nonce every time: it never settles
	refuseNext    int        // refuse this many more valid tokens, as if revoked
	nonceVal      string
	served        int // requests answered 200
	bearer        int // of which with a Bearer token
	nonceAsked    int
	authSeen      []string // the Authorization header of every request
	proofErrs     []string
	jtis          map[string]bool
}

func newTestRS(t *testing.T, as *testAS) *testRS {
	t.Helper()
	rs := &testRS{as: as, jtis: map[string]bool{}}
	rs.Server = httptest.NewServer(http.HandlerFunc(rs.serve))
	t.Cleanup(rs.Close)
	return rs
}

func (rs *testRS) setAS(as *testAS, spelling string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.as, rs.asName = as, spelling
}

func (rs *testRS) prmURL() string { return rs.URL + "/.well-known/oauth-protected-resource/mcp" }

func (rs *testRS) serve(w http.ResponseWriter, r *http.Request) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	switch r.URL.Path {
	case "/.well-known/oauth-protected-resource/mcp":
		name := rs.asName
		if name == "" {
			name = rs.as.issuerName()
		}
		writeJSON(w, map[string]any{"resource": rs.URL + "/mcp", "authorization_servers": []string{name},
			"dpop_bound_access_tokens_required": rs.dpopRequired})
	case "/mcp":
		rs.mcp(w, r)
	default:
		http.NotFound(w, r)
	}
}

// challenge answers 401 with the challenges of the resource, errCode in
// each when not empty.
func (rs *testRS) challenge(w http.ResponseWriter, errCode string) {
	e := ""
	if errCode != "" {
		e = fmt.Sprintf(`error=%q, `, errCode)
	}
	var cs []string
	if !rs.dpopRequired {
		cs = append(cs, fmt.Sprintf(`Bearer %sresource_metadata=%q`, e, rs.prmURL()))
	}
	if rs.dpopChallenge || rs.dpopRequired {
		cs = append(cs, fmt.Sprintf(`DPoP %salgs="ES256", resource_metadata=%q`, e, rs.prmURL()))
	}
	w.Header().Set("WWW-Authenticate", strings.Join(cs, ", "))
	http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
}

func (rs *testRS) mcp(w http.ResponseWriter, r *http.Request) {
	auth := r.Header.Get("Authorization")
	rs.authSeen = append(rs.authSeen, auth)
	scheme, tok, _ := strings.Cut(auth, " ")
	g, live := rs.as.lookup(tok)
	switch {
	case auth == "":
		rs.challenge(w, "")
		return
	case !live:
		rs.challenge(w, "invalid_token")
		return
	case g.jkt == "" && (rs.dpopRequired || !strings.EqualFold(scheme, "Bearer")):
		rs.challenge(w, "invalid_token")
		return
	case g.jkt != "":
		if !strings.EqualFold(scheme, "DPoP") {
			rs.proofErrs = append(rs.proofErrs, "a bound token sent as "+scheme)
			rs.challenge(w, "invalid_token")
			return
		}
		nonce := ""
		if rs.nonce {
			nonce = rs.nonceVal
			if nonce == "" {
				nonce = "unset" // no proof carries it: the first is asked for one
			}
		}
		jkt, err := verifyProof(r, rs.URL+"/mcp", tok, nonce, rs.jtis)
		if rs.newNonce && err == nil {
			err = errWantNonce
		}
		switch {
		case errors.Is(err, errWantNonce):
			rs.nonceAsked++
			if rs.nonceVal == "" || rs.newNonce { // a nonce stays good until it is replaced
				rs.nonceVal = fmt.Sprintf("rs-nonce-%d", rs.nonceAsked)
			}
			w.Header().Set("DPoP-Nonce", rs.nonceVal)
			w.Header().Set("WWW-Authenticate", `DPoP error="use_dpop_nonce", error_description="Resource server requires nonce in DPoP proof"`)
			http.Error(w, `{"error":"use_dpop_nonce"}`, http.StatusUnauthorized)
			return
		case err != nil:
			rs.proofErrs = append(rs.proofErrs, err.Error())
			rs.challenge(w, "invalid_dpop_proof")
			return
		case jkt != g.jkt:
			rs.proofErrs = append(rs.proofErrs, "the proof's key is not the token's")
			rs.challenge(w, "invalid_token")
			return
		}
	}
	if rs.refuseNext > 0 {
		rs.refuseNext--
		rs.challenge(w, "invalid_token")
		return
	}
	rs.served++
	if g.jkt == "" {
		rs.bearer++
	}
	writeJSON(w, map[string]any{"jsonrpc": "2.0", "id": 1, "result": map[string]any{}})
}

func (rs *testRS) counts() (served, bearer, nonceAsked int, proofErrs []string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.served, rs.bearer, rs.nonceAsked, slices.Clone(rs.proofErrs)
}

// newTestClient returns user alice's authorizer of the MCP server at rs,
// signing in through FetchBrowser, and the HTTP client of her session.
func newTestClient(t *testing.T, rs *testRS, store TokenStore, o *mcpconfig.OAuthConfig) (*Authorizer, *http.Client) {
	t.Helper()
	cfg := mcpconfig.ServerConfig{Name: "s", Transport: mcpconfig.TransportHTTP, URL: rs.URL + "/mcp", OAuth: o}
	a := NewAuthorizer(cfg, "alice", store, FetchBrowser{}, slog.New(slog.DiscardHandler))
	t.Cleanup(a.CloseIdleConnections)
	base := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(base.CloseIdleConnections)
	return a, &http.Client{Transport: NewRoundTripper(base, cfg, a), CheckRedirect: ServerRedirects(cfg.Name), Timeout: 10 * time.Second}
}

// call sends one request to the MCP server through c, as a session does.
func call(t *testing.T, c *http.Client, rs *testRS) error {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, rs.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the server answered %s", resp.Status)
	}
	return nil
}
