package mcpauth

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// DPoP (RFC 9449) binds a token to a key the client holds: every token
// request and every request to the MCP server carries a proof, a JWS over
// the method and URL signed with that key, and a stolen token is useless
// without it. The gateway asks for a DPoP-bound token when the server asks
// for one (wantDPoP): a DPoP challenge on its 401 (RFC 9449 §7.1), or
// dpop_bound_access_tokens_required in its resource metadata (RFC 9728 §2).
//
// The key is ES256 (P-256), made for one grant and kept with the token it
// is bound to (Token.DPoPKey, as secret as the refresh token, which is
// bound to it too, §5): a key in memory only would leave the token
// unusable on another replica or after a restart. A proof is signed by
// signJWS, the standard library's ECDSA, as the client assertion is.
// go-jose would fit, but the package already signs JWS, the public JWK
// is three members and its thumbprint one hash; the tests verify every
// proof with go-jose, which keeps the verifier independent of the signer.

// dpopAlg is the only DPoP signing algorithm the gateway uses.
const dpopAlg = "ES256"

// maxNonceRetries bounds how often one request is sent again with a fresh
// DPoP nonce (RFC 9449 §8, §9), so that a server that asks for a new nonce
// every time cannot loop.
const maxNonceRetries = 1

// maxNonceLen bounds a DPoP-Nonce kept from a server.
const maxNonceLen = 512

// dpopKey is the key of a DPoP-bound token. It is immutable.
type dpopKey struct {
	priv *ecdsa.PrivateKey
	// jwk is the public key as a JWK, its members in lexicographic order
	// without whitespace, so that its SHA-256 is the RFC 7638 thumbprint.
	jwk json.RawMessage
}

// newDPoPKey makes a new P-256 key.
func newDPoPKey() (*dpopKey, error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("make a DPoP key: %w", err)
	}
	return dpopKeyOf(priv)
}

// parseDPoPKey reads a key written by encode.
func parseDPoPKey(s string) (*dpopKey, error) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("the stored DPoP key is not base64url")
	}
	priv, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), raw)
	if err != nil {
		return nil, fmt.Errorf("the stored DPoP key is not a P-256 key")
	}
	return dpopKeyOf(priv)
}

func dpopKeyOf(priv *ecdsa.PrivateKey) (*dpopKey, error) {
	pub, err := priv.PublicKey.Bytes() // 0x04 || X || Y
	if err != nil || len(pub) != 65 {
		return nil, fmt.Errorf("encode the DPoP public key: %v", err)
	}
	enc := base64.RawURLEncoding
	jwk := `{"crv":"P-256","kty":"EC","x":"` + enc.EncodeToString(pub[1:33]) + `","y":"` + enc.EncodeToString(pub[33:]) + `"}`
	return &dpopKey{priv: priv, jwk: json.RawMessage(jwk)}, nil
}

// encode returns the private key as text, for Token.DPoPKey.
func (k *dpopKey) encode() string {
	raw, _ := k.priv.Bytes() // a P-256 key always encodes
	return base64.RawURLEncoding.EncodeToString(raw)
}

// thumbprint is the RFC 7638 SHA-256 thumbprint of the public key, the
// jkt a bound token names.
func (k *dpopKey) thumbprint() string {
	sum := sha256.Sum256(k.jwk)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// proof returns a DPoP proof (RFC 9449 §4.2) for a request with method to
// u, carrying nonce when not empty and, when accessToken is not empty, its
// hash (ath) as a request to a resource must.
func (k *dpopKey) proof(method string, u *url.URL, nonce, accessToken string, now time.Time) (string, error) {
	header, _ := json.Marshal(struct {
		Typ string          `json:"typ"`
		Alg string          `json:"alg"`
		JWK json.RawMessage `json:"jwk"`
	}{"dpop+jwt", dpopAlg, k.jwk})
	claims := struct {
		JTI   string `json:"jti"`
		HTM   string `json:"htm"`
		HTU   string `json:"htu"`
		IAT   int64  `json:"iat"`
		ATH   string `json:"ath,omitempty"`
		Nonce string `json:"nonce,omitempty"`
	}{JTI: rand.Text(), HTM: method, HTU: htu(u), IAT: now.Unix(), Nonce: nonce}
	if accessToken != "" {
		sum := sha256.Sum256([]byte(accessToken))
		claims.ATH = base64.RawURLEncoding.EncodeToString(sum[:])
	}
	body, _ := json.Marshal(claims)
	enc := base64.RawURLEncoding
	signing := enc.EncodeToString(header) + "." + enc.EncodeToString(body)
	sig, err := signJWS(k.priv, dpopAlg, []byte(signing))
	if err != nil {
		return "", fmt.Errorf("sign a DPoP proof: %w", err)
	}
	return signing + "." + enc.EncodeToString(sig), nil
}

// htu is the htu claim of a request to u: its URL without query and
// fragment (RFC 9449 §4.2), nor user information.
func htu(u *url.URL) string {
	c := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}
	return c.String()
}

// dpopNonces keeps the last DPoP nonce each server gave (RFC 9449 §8 for
// an authorization server, §9 for a resource), by origin. The zero value
// is ready; it is safe for concurrent use.
type dpopNonces struct {
	// mu guards m.
	mu sync.Mutex
	m  map[string]string
}

// get returns the nonce of u's origin; empty when there is none.
func (n *dpopNonces) get(u *url.URL) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.m[origin(u)]
}

// note keeps the DPoP-Nonce resp carries for u's origin, and returns it;
// empty when it carries none, or one that is not a nonce (RFC 9449 §8.1:
// 1*NQCHAR), which is ignored.
func (n *dpopNonces) note(u *url.URL, resp *http.Response) string {
	nonce := resp.Header.Get("DPoP-Nonce")
	if !validNonce(nonce) {
		return ""
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.m == nil {
		n.m = map[string]string{}
	}
	n.m[origin(u)] = nonce
	return nonce
}

func validNonce(s string) bool {
	if s == "" || len(s) > maxNonceLen {
		return false
	}
	for i := range len(s) {
		if c := s[i]; c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// wantDPoP decides whether to ask for a DPoP-bound token: when the
// resource asks for one (a DPoP challenge, or its metadata requires
// bound tokens) and the authorization server can bind one to an ES256 key
// (dpop_signing_alg_values_supported lists ES256, or says nothing). A
// resource that requires DPoP of an authorization server that cannot
// is an error.
func wantDPoP(ch Challenge, t *authTarget) (bool, error) {
	if !ch.dpop() && !t.dpopRequired {
		return false, nil
	}
	algs := t.as.DPoPSigningAlgs
	if len(algs) > 0 && !slices.Contains(algs, dpopAlg) {
		if t.dpopRequired {
			return false, fmt.Errorf("the server requires DPoP-bound tokens, and authorization server %s takes DPoP proofs signed with %s only, not %s",
				t.as.Issuer, strings.Join(algs, ", "), dpopAlg)
		}
		return false, nil
	}
	return true, nil
}

// dpopCtxKey carries a token request's DPoP key through x/oauth2 to
// dpopOnToken.
type dpopCtxKey struct{}

type dpopUse struct {
	key    *dpopKey
	nonces *dpopNonces
}

// withDPoP returns ctx whose token requests carry proofs signed with key.
func withDPoP(ctx context.Context, key *dpopKey, nonces *dpopNonces) context.Context {
	return context.WithValue(ctx, dpopCtxKey{}, &dpopUse{key: key, nonces: nonces})
}

// dpopOnToken puts a DPoP proof on the token requests of a ctx from
// withDPoP (x/oauth2 has no way to add a header), and answers the
// authorization server's use_dpop_nonce by sending the request again once
// with the nonce it gave (RFC 9449 §8).
type dpopOnToken struct{ base http.RoundTripper }

func (t *dpopOnToken) RoundTrip(r *http.Request) (*http.Response, error) {
	use, _ := r.Context().Value(dpopCtxKey{}).(*dpopUse)
	if use == nil || r.Method != http.MethodPost {
		return t.base.RoundTrip(r)
	}
	for retries := 0; ; retries++ {
		req := r.Clone(r.Context())
		if retries > 0 {
			body, err := r.GetBody()
			if err != nil {
				return nil, err
			}
			req.Body = body
		}
		proof, err := use.key.proof(r.Method, r.URL, use.nonces.get(r.URL), "", time.Now())
		if err != nil {
			closeBody(req)
			return nil, err
		}
		req.Header.Set("DPoP", proof)
		resp, err := t.base.RoundTrip(req)
		if err != nil {
			return nil, err
		}
		fresh := use.nonces.note(r.URL, resp)
		if fresh == "" || retries >= maxNonceRetries || r.GetBody == nil ||
			(resp.StatusCode != http.StatusBadRequest && resp.StatusCode != http.StatusUnauthorized) {
			return resp, nil
		}
		// Is it use_dpop_nonce? Read the error to see, and hand the
		// response on as it came when it is not.
		raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		_ = resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("read the answer of %s: %w", endpointName(r.URL), err)
		}
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(raw, &e) != nil || e.Error != "use_dpop_nonce" {
			resp.Body = io.NopCloser(bytes.NewReader(raw))
			return resp, nil
		}
	}
}

// keyOf returns the DPoP key of tok, parsing it once per token.
func (a *Authorizer) keyOf(tok *Token) (*dpopKey, error) {
	a.mu.Lock()
	k, enc := a.dpopKey, a.dpopKeyText
	a.mu.Unlock()
	if k != nil && enc == tok.DPoPKey {
		return k, nil
	}
	if tok.DPoPKey == "" {
		return nil, fmt.Errorf("server %q: the token is DPoP-bound and its key is missing; sign in again", a.key.Server)
	}
	k, err := parseDPoPKey(tok.DPoPKey)
	if err != nil {
		return nil, fmt.Errorf("server %q: %w; sign in again", a.key.Server, err)
	}
	a.mu.Lock()
	a.dpopKey, a.dpopKeyText = k, tok.DPoPKey
	a.mu.Unlock()
	return k, nil
}

// authorize puts tok on req: "Authorization: Bearer", or for a DPoP-bound
// token "Authorization: DPoP" and a proof bound to it (RFC 9449 §7.1)
// with the server's last nonce.
func (a *Authorizer) authorize(req *http.Request, tok *Token) error {
	if !tok.dpop() {
		req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
		return nil
	}
	k, err := a.keyOf(tok)
	if err != nil {
		return err
	}
	proof, err := k.proof(req.Method, req.URL, a.nonces.get(req.URL), tok.AccessToken, time.Now())
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "DPoP "+tok.AccessToken)
	req.Header.Set("DPoP", proof)
	return nil
}

// bindCtx returns ctx for a token request of a grant that wants DPoP
// (key nil: make a new key), and the key; ctx and nil when it does not.
func (a *Authorizer) bindCtx(ctx context.Context, want bool, key *dpopKey) (context.Context, *dpopKey, error) {
	if !want {
		return ctx, nil, nil
	}
	if key == nil {
		var err error
		if key, err = newDPoPKey(); err != nil {
			return nil, nil, err
		}
	}
	return withDPoP(ctx, key, &a.nonces), key, nil
}

// bound finishes a token from a grant that asked for DPoP with key (nil:
// it did not): a DPoP token keeps its key; a Bearer one is refused when
// the resource requires bound tokens, and otherwise used as it is (the
// authorization server does not do DPoP).
func bound(tok *Token, key *dpopKey, required bool, issuer string) error {
	switch {
	case key == nil:
		return nil
	case tok.dpop():
		tok.DPoPKey = key.encode()
		return nil
	case required:
		return fmt.Errorf("the server requires DPoP-bound tokens, and authorization server %s issued a token of type %q", issuer, tok.TokenType)
	}
	return nil
}
