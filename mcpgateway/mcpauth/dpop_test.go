package mcpauth

import (
	"encoding/base64"
	"fmt"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestDPoP signs in to servers that ask for DPoP-bound tokens (RFC 9449)
// in each way a server can, and checks every proof the fixture saw (its
// signature with the embedded key, typ, htm, htu, iat, a fresh jti, the
// ath of the token, the nonce asked for, the key the token is bound to):
// at the token endpoint for the code and for a refresh, and on each call
// with "Authorization: DPoP". A nonce asked for is kept: one challenge
// per server, not one per request. The stored token carries its key, so
// another replica sharing the store sends proofs the server takes.
func TestDPoP(t *testing.T) {
	tests := []struct {
		name                  string
		challenge, required   bool
		asNonce, rsNonce      bool
		wantASNonce, wantRSNo int
	}{
		{name: "DPoP challenge", challenge: true},
		{name: "resource metadata requires it", required: true},
		{name: "nonces at both servers", required: true, asNonce: true, rsNonce: true, wantASNonce: 1, wantRSNo: 1},
		{name: "nonce at the resource only", challenge: true, rsNonce: true, wantRSNo: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			as := newTestAS(t, "as")
			as.dpopAlgs, as.nonce = []string{"RS256", "ES256"}, tt.asNonce
			rs := newTestRS(t, as)
			rs.dpopChallenge, rs.dpopRequired, rs.nonce = tt.challenge, tt.required, tt.rsNonce
			store := &MemoryTokenStore{}
			a, c := newTestClient(t, rs, store, nil)
			for i := range 3 {
				if err := call(t, c, rs); err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
			}
			tok := a.peek()
			if tok == nil || tok.TokenType != "DPoP" || tok.DPoPKey == "" {
				t.Fatalf("token = %v; want a DPoP-bound one with its key", tok.LogValue())
			}
			// A refresh proves the same key; the new token works.
			a.SetTokenExpiry(time.Now())
			if err := call(t, c, rs); err != nil {
				t.Fatalf("call after the refresh: %v", err)
			}
			if now := a.peek(); now.AccessToken == tok.AccessToken || now.DPoPKey != tok.DPoPKey {
				t.Errorf("after the refresh: a new token %v, the same key %v; want both", now.AccessToken != tok.AccessToken, now.DPoPKey == tok.DPoPKey)
			}
			registrations, _, proofs, asNonces, asErrs := as.counts()
			_, _, rsNonces, _ := rs.counts()
			// Another replica reads the token, key and all, from the store
			// (and is asked for a nonce of its own).
			_, c2 := newTestClient(t, rs, store, nil)
			if err := call(t, c2, rs); err != nil {
				t.Fatalf("call from another replica: %v", err)
			}
			served, bearer, _, rsErrs := rs.counts()
			if len(asErrs)+len(rsErrs) > 0 {
				t.Errorf("bad proofs: at the token endpoint %q, at the server %q", asErrs, rsErrs)
			}
			if registrations != 1 || proofs != 2+tt.wantASNonce || asNonces != tt.wantASNonce {
				t.Errorf("%d registrations, %d token requests with proofs, %d nonce challenges; want 1, %d, %d",
					registrations, proofs, asNonces, 2+tt.wantASNonce, tt.wantASNonce)
			}
			if served != 5 || bearer != 0 || rsNonces != tt.wantRSNo {
				t.Errorf("server: %d served, %d with Bearer, %d nonce challenges; want 5, 0, %d", served, bearer, rsNonces, tt.wantRSNo)
			}
			rs.mu.Lock()
			for _, h := range rs.authSeen {
				if h != "" && !strings.HasPrefix(h, "DPoP as-access-") {
					t.Errorf("Authorization %q; want the DPoP scheme", h)
				}
			}
			rs.mu.Unlock()
		})
	}
}

// TestDPoPOnlyWhenAsked checks that an authorization server offering DPoP
// is not enough: a server that did not ask gets a Bearer token, and the
// token request carries no proof.
func TestDPoPOnlyWhenAsked(t *testing.T) {
	as := newTestAS(t, "as")
	as.dpopAlgs = []string{"ES256"}
	rs := newTestRS(t, as)
	a, c := newTestClient(t, rs, &MemoryTokenStore{}, nil)
	if err := call(t, c, rs); err != nil {
		t.Fatal(err)
	}
	_, _, proofs, _, _ := as.counts()
	served, bearer, _, _ := rs.counts()
	if tok := a.peek(); proofs != 0 || served != 1 || bearer != 1 || tok.DPoPKey != "" {
		t.Errorf("%d proofs, %d served (%d Bearer), key kept %v; want 0, 1 (1), false", proofs, served, bearer, tok.DPoPKey != "")
	}
}

// TestDPoPRequiredUnsupported checks that a server requiring DPoP whose
// authorization server takes no ES256 proofs is a clear error before any
// token request.
func TestDPoPRequiredUnsupported(t *testing.T) {
	as := newTestAS(t, "as")
	as.dpopAlgs = []string{"RS256"}
	rs := newTestRS(t, as)
	rs.dpopRequired = true
	_, c := newTestClient(t, rs, &MemoryTokenStore{}, nil)
	err := call(t, c, rs)
	if err == nil || !strings.Contains(err.Error(), "requires DPoP-bound tokens") || !strings.Contains(err.Error(), "RS256 only, not ES256") {
		t.Errorf("call = %v; want an error naming the algorithms", err)
	}
	if _, n, _, _, _ := as.counts(); n != 0 {
		t.Errorf("%d token requests, want none", n)
	}
}

// TestDPoPNonceRetryBounded checks that a server that asks for a new nonce
// every time is given one retry, not a loop: at the MCP server and at the
// token endpoint.
func TestDPoPNonceRetryBounded(t *testing.T) {
	t.Run("resource", func(t *testing.T) {
		as := newTestAS(t, "as")
		as.dpopAlgs = []string{"ES256"}
		rs := newTestRS(t, as)
		rs.dpopRequired, rs.nonce, rs.newNonce = true, true, true
		_, c := newTestClient(t, rs, &MemoryTokenStore{}, nil)
		err := call(t, c, rs)
		if err == nil || !strings.Contains(err.Error(), "asks for a new DPoP nonce again") {
			t.Errorf("call = %v; want the nonce loop refused", err)
		}
		if _, _, n, errs := rs.counts(); n != 1+maxNonceRetries || len(errs) > 0 {
			t.Errorf("%d nonce challenges (bad proofs %q); want %d", n, errs, 1+maxNonceRetries)
		}
	})
	t.Run("token endpoint", func(t *testing.T) {
		as := newTestAS(t, "as")
		as.dpopAlgs, as.nonce, as.newNonce = []string{"ES256"}, true, true
		rs := newTestRS(t, as)
		rs.dpopRequired = true
		_, c := newTestClient(t, rs, &MemoryTokenStore{}, nil)
		err := call(t, c, rs)
		if err == nil || !strings.Contains(err.Error(), "use_dpop_nonce") {
			t.Errorf("call = %v; want the token endpoint's use_dpop_nonce", err)
		}
		if _, n, _, challenges, errs := as.counts(); n != 1+maxNonceRetries || challenges != n || len(errs) > 0 {
			t.Errorf("%d token requests, %d nonce challenges (bad proofs %q); want %d each", n, challenges, errs, 1+maxNonceRetries)
		}
	})
}

// TestDPoPProofClaims checks one proof's claims against RFC 9449 §4.2: the
// URL without query and fragment, the method as sent, the ath of the token
// and the nonce given, and a jti of its own per proof.
func TestDPoPProofClaims(t *testing.T) {
	k, err := newDPoPKey()
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse("https://user:pw@mcp.example:8443/a/b%2Fc?x=1#frag")
	got := map[string]bool{}
	for range 2 {
		p, err := k.proof("DELETE", u, "n-1", "tok", time.Unix(1700000000, 0))
		if err != nil {
			t.Fatal(err)
		}
		claims := decodeSegment(t, p, 1)
		for _, want := range []string{`"htm":"DELETE"`, `"htu":"https://mcp.example:8443/a/b%2Fc"`, `"iat":1700000000`,
			`"ath":"GnZ0607njffhrEOak8P6jjyUV4TU3sn9jjARc4svHWI"`, `"nonce":"n-1"`} {
			if !strings.Contains(claims, want) {
				t.Errorf("claims %s lack %s", claims, want)
			}
		}
		if header := decodeSegment(t, p, 0); !strings.Contains(header, `"typ":"dpop+jwt","alg":"ES256","jwk":{"crv":"P-256","kty":"EC"`) || strings.Contains(header, `"d"`) {
			t.Errorf("header %s; want typ, alg and a public jwk only", header)
		}
		got[claims] = true
	}
	if len(got) != 2 {
		t.Errorf("two proofs with the same claims: the jti is not fresh")
	}
	// The key survives its encoding, thumbprint and all.
	back, err := parseDPoPKey(k.encode())
	if err != nil || back.thumbprint() != k.thumbprint() {
		t.Errorf("parseDPoPKey(encode) = %v; want the same key", err)
	}
	if _, err := parseDPoPKey("not a key"); err == nil || strings.Contains(fmt.Sprint(err), "not a key") {
		t.Errorf("parseDPoPKey(junk) = %v; want an error that does not quote it", err)
	}
}

// decodeSegment returns segment i of a compact JWS, decoded.
func decodeSegment(t *testing.T, jws string, i int) string {
	t.Helper()
	parts := strings.Split(jws, ".")
	if len(parts) != 3 {
		t.Fatalf("%d segments in a JWS", len(parts))
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[i])
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestFixtureRefusesBadProofs checks the fixture's verifier against
// proofs that break one rule each, so that the tests above could fail.
func TestFixtureRefusesBadProofs(t *testing.T) {
	k, err := newDPoPKey()
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse("http://127.0.0.1:1/mcp")
	good := func() string {
		p, _ := k.proof("POST", u, "n", "tok", time.Now())
		return p
	}
	tamper := func(p string) string { // flip one bit of the signature
		i := strings.LastIndexByte(p, '.')
		sig, _ := base64.RawURLEncoding.DecodeString(p[i+1:])
		sig[10] ^= 1
		return p[:i+1] + base64.RawURLEncoding.EncodeToString(sig)
	}
	tests := []struct {
		name, proof, method, htu, token, nonce string
		want                                   string
	}{
		{"good", good(), "POST", u.String(), "tok", "n", ""},
		{"another method", good(), "GET", u.String(), "tok", "n", "htm"},
		{"another url", good(), "POST", "http://127.0.0.1:1/other", "tok", "n", "htu"},
		{"another token", good(), "POST", u.String(), "other", "n", "ath"},
		{"another nonce", good(), "POST", u.String(), "tok", "m", errWantNonce.Error()},
		{"tampered signature", tamper(good()), "POST", u.String(), "tok", "n", "signature"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(tt.method, tt.htu, nil)
			r.Header.Set("DPoP", tt.proof)
			_, err := verifyProof(r, tt.htu, tt.token, tt.nonce, map[string]bool{})
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("verifyProof = %v; want %q", err, tt.want)
			}
		})
	}
	// The same proof twice: a replayed jti.
	p, jtis := good(), map[string]bool{}
	for i, want := range []bool{true, false} {
		r := httptest.NewRequest("POST", u.String(), nil)
		r.Header.Set("DPoP", p)
		if _, err := verifyProof(r, u.String(), "tok", "n", jtis); (err == nil) != want {
			t.Errorf("use %d of one proof: %v", i, err)
		}
	}
}

// BenchmarkDPoPProof measures what DPoP adds to each request to a server
// that asks for it: one ES256 proof.
func BenchmarkDPoPProof(b *testing.B) {
	k, err := newDPoPKey()
	if err != nil {
		b.Fatal(err)
	}
	u, _ := url.Parse("https://mcp.example/mcp")
	for b.Loop() {
		if _, err := k.proof("POST", u, "nonce", "access-token", time.Now()); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDPoPConcurrentCalls sends calls at once through one session of a
// server that requires DPoP and nonces: the first 401s share one sign-in,
// every proof is fresh (the fixture refuses a replayed jti), and the key
// and nonces are shared without a race (run with -race).
func TestDPoPConcurrentCalls(t *testing.T) {
	as := newTestAS(t, "as")
	as.dpopAlgs, as.nonce = []string{"ES256"}, true
	rs := newTestRS(t, as)
	rs.dpopRequired, rs.nonce = true, true
	_, c := newTestClient(t, rs, &MemoryTokenStore{}, nil)
	const callers = 8
	errs := make(chan error, callers)
	for range callers {
		go func() { errs <- call(t, c, rs) }()
	}
	for range callers {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	registrations, _, _, _, asErrs := as.counts()
	served, _, _, rsErrs := rs.counts()
	if registrations != 1 || served != callers || len(asErrs)+len(rsErrs) > 0 {
		t.Errorf("%d registrations, %d served, bad proofs %q %q; want 1, %d, none", registrations, served, asErrs, rsErrs, callers)
	}
}
