package mcpauth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// signingKeys returns one PEM private key per JWS algorithm the client
// signs with, in each PEM form ParseSigningKey reads, with its public key.
func signingKeys(t *testing.T) map[string]struct {
	pem string
	pub crypto.PublicKey
} {
	t.Helper()
	out := map[string]struct {
		pem string
		pub crypto.PublicKey
	}{}
	add := func(alg, typ string, der []byte, err error, pub crypto.PublicKey) {
		if err != nil {
			t.Fatalf("marshal the %s key: %v", alg, err)
		}
		out[alg] = struct {
			pem string
			pub crypto.PublicKey
		}{string(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})), pub}
	}
	p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, err := x509.MarshalPKCS8PrivateKey(p256)
	add("ES256", "PRIVATE KEY", der, err, &p256.PublicKey)
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	der, err = x509.MarshalECPrivateKey(p384)
	add("ES384", "EC PRIVATE KEY", der, err, &p384.PublicKey)
	p521, _ := ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	der, err = x509.MarshalPKCS8PrivateKey(p521)
	add("ES512", "PRIVATE KEY", der, err, &p521.PublicKey)
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	add("RS256", "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rk), nil, &rk.PublicKey)
	epub, epriv, _ := ed25519.GenerateKey(rand.Reader)
	der, err = x509.MarshalPKCS8PrivateKey(epriv)
	add("EdDSA", "PRIVATE KEY", der, err, epub)
	return out
}

// assertionAS is an authorization server and protected resource on
// 127.0.0.1 whose token endpoint verifies private_key_jwt client
// assertions with go-jose, an implementation independent of ours.
type assertionAS struct {
	as, rs *httptest.Server
	mu     sync.Mutex
	pub    crypto.PublicKey // the key the next assertion must verify with
	form   []string         // client_assertion_type of each token request
	header []jose.Header
	claims []jwt.Claims
	errs   []error
}

func newAssertionAS(t *testing.T) *assertionAS {
	t.Helper()
	f := &assertionAS{}
	all := []jose.SignatureAlgorithm{jose.ES256, jose.ES384, jose.ES512, jose.RS256, jose.EdDSA}
	f.as = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			writeJSON(w, map[string]any{"issuer": f.as.URL, "authorization_endpoint": f.as.URL + "/authorize",
				"token_endpoint": f.as.URL + "/token", "code_challenge_methods_supported": []string{"S256"},
				"token_endpoint_auth_methods_supported":            []string{"private_key_jwt"},
				"token_endpoint_auth_signing_alg_values_supported": all})
		case "/token":
			_ = r.ParseForm()
			f.mu.Lock()
			defer f.mu.Unlock()
			f.form = append(f.form, r.PostForm.Get("client_assertion_type"))
			tok, err := jwt.ParseSigned(r.PostForm.Get("client_assertion"), all)
			var c jwt.Claims
			if err == nil {
				f.header = append(f.header, tok.Headers[0])
				err = tok.Claims(f.pub, &c)
			}
			f.claims = append(f.claims, c)
			f.errs = append(f.errs, err)
			if err != nil {
				w.WriteHeader(http.StatusUnauthorized)
				writeJSON(w, map[string]string{"error": "invalid_client"})
				return
			}
			writeJSON(w, map[string]any{"access_token": "service", "token_type": "Bearer", "expires_in": 3600})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(f.as.Close)
	f.rs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/.well-known/oauth-protected-resource/mcp" {
			http.NotFound(w, r)
			return
		}
		writeJSON(w, map[string]any{"resource": f.rs.URL + "/mcp", "authorization_servers": []string{f.as.URL}})
	}))
	t.Cleanup(f.rs.Close)
	return f
}

// TestClientAssertionEveryAlgorithm signs a client-credentials assertion
// with each of the five algorithms a private key can give, sends it to a
// real token endpoint and verifies it there with go-jose: signature,
// header (alg, typ, no kid since none is configured) and claims (RFC 7523
// §3: iss and sub the client, aud the issuer, exp five minutes after iat,
// a fresh jti).
func TestClientAssertionEveryAlgorithm(t *testing.T) {
	f := newAssertionAS(t)
	seen := map[string]bool{}
	for alg, key := range signingKeys(t) {
		t.Run(alg, func(t *testing.T) {
			f.mu.Lock()
			f.pub = key.pub
			n := len(f.errs)
			f.mu.Unlock()
			cfg := mcpconfig.ServerConfig{Name: "svc", Transport: mcpconfig.TransportHTTP, URL: f.rs.URL + "/mcp",
				OAuth: &mcpconfig.OAuthConfig{Grant: mcpconfig.GrantClientCredentials, ClientID: "svc-client",
					ClientAuth: mcpconfig.AuthPrivateKeyJWT, PrivateKey: key.pem}}
			a := NewAuthorizer(cfg, "", &MemoryTokenStore{}, nil, slog.New(slog.DiscardHandler))
			t.Cleanup(a.CloseIdleConnections)
			before := time.Now().Unix()
			tok, err := a.ClientCredentials(t.Context(), Challenge{}, nil)
			after := time.Now().Unix()
			f.mu.Lock()
			defer f.mu.Unlock()
			if len(f.errs) != n+1 {
				t.Fatalf("token requests = %d, want 1 (ClientCredentials: %v)", len(f.errs)-n, err)
			}
			if f.errs[n] != nil {
				t.Fatalf("go-jose refused the %s assertion: %v", alg, f.errs[n])
			}
			if err != nil || tok.AccessToken != "service" {
				t.Fatalf("ClientCredentials = %v, %v; want the service token", tok, err)
			}
			if f.form[n] != clientAssertionType {
				t.Errorf("client_assertion_type = %q, want %q", f.form[n], clientAssertionType)
			}
			h, c := f.header[n], f.claims[n]
			if h.Algorithm != alg || h.KeyID != "" || h.ExtraHeaders[jose.HeaderType] != "JWT" {
				t.Errorf("header alg=%q kid=%q typ=%v; want alg=%s, no kid, typ=JWT", h.Algorithm, h.KeyID, h.ExtraHeaders[jose.HeaderType], alg)
			}
			if c.Issuer != "svc-client" || c.Subject != "svc-client" || len(c.Audience) != 1 || c.Audience[0] != f.as.URL {
				t.Errorf("claims iss=%q sub=%q aud=%v; want the client twice and the issuer %s", c.Issuer, c.Subject, c.Audience, f.as.URL)
			}
			if c.IssuedAt == nil || c.Expiry == nil || int64(*c.IssuedAt) < before || int64(*c.IssuedAt) > after ||
				int64(*c.Expiry)-int64(*c.IssuedAt) != 300 {
				t.Errorf("claims iat=%v exp=%v; want iat now and exp 300 s later", c.IssuedAt, c.Expiry)
			}
			if err := c.Validate(jwt.Expected{Issuer: "svc-client", Subject: "svc-client", AnyAudience: jwt.Audience{f.as.URL}}); err != nil {
				t.Errorf("go-jose validation: %v", err)
			}
			if raw, err := base64.RawURLEncoding.DecodeString(c.ID); err != nil || len(raw) != 16 || seen[c.ID] {
				t.Errorf("jti = %q; want 16 fresh random bytes, base64url", c.ID)
			}
			seen[c.ID] = true
		})
	}
	if len(seen) != 5 {
		t.Errorf("verified %d algorithms, want 5", len(seen))
	}
}
