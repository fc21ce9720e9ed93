package mcpauth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash"
	"math/big"
	"time"

	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// The private_key_jwt client assertion (RFC 7523 §2.2, RFC 7521 §4.2) is a
// compact JWS the standard library signs on its own: ES256/384/512, RS256
// and EdDSA need crypto/ecdsa, crypto/rsa and crypto/ed25519 only, so no
// JWT dependency is taken for one signature.

// clientAssertionType is the client_assertion_type of a JWT assertion.
const clientAssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

// clientAssertion returns a signed JWT asserting clientID to the
// authorization server audience (its issuer), valid for five minutes.
func clientAssertion(pemKey, clientID, audience string, now time.Time) (string, error) {
	key, alg, err := mcpconfig.ParseSigningKey(pemKey)
	if err != nil {
		return "", err
	}
	jti := make([]byte, 16)
	_, _ = rand.Read(jti) // crypto/rand.Read never fails
	header, _ := json.Marshal(map[string]string{"alg": alg, "typ": "JWT"})
	claims, _ := json.Marshal(map[string]any{
		"iss": clientID, "sub": clientID, "aud": audience,
		"iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(),
		"jti": base64.RawURLEncoding.EncodeToString(jti),
	})
	enc := base64.RawURLEncoding
	signing := enc.EncodeToString(header) + "." + enc.EncodeToString(claims)
	sig, err := signJWS(key, alg, []byte(signing))
	if err != nil {
		return "", fmt.Errorf("sign the client assertion: %w", err)
	}
	return signing + "." + enc.EncodeToString(sig), nil
}

// signJWS signs data as JWS alg does (RFC 7518 §3).
func signJWS(key crypto.Signer, alg string, data []byte) ([]byte, error) {
	if alg == "EdDSA" {
		return key.Sign(rand.Reader, data, crypto.Hash(0))
	}
	var h hash.Hash
	var ch crypto.Hash
	switch alg {
	case "ES384":
		h, ch = sha512.New384(), crypto.SHA384
	case "ES512":
		h, ch = sha512.New(), crypto.SHA512
	default:
		h, ch = sha256.New(), crypto.SHA256
	}
	h.Write(data)
	digest := h.Sum(nil)
	if k, ok := key.(*ecdsa.PrivateKey); ok {
		// JWS wants r||s, each left-padded to the curve's size, not ASN.1.
		r, s, err := ecdsa.Sign(rand.Reader, k, digest)
		if err != nil {
			return nil, err
		}
		size := (k.Curve.Params().BitSize + 7) / 8
		out := make([]byte, 2*size)
		fill(out[:size], r)
		fill(out[size:], s)
		return out, nil
	}
	return key.Sign(rand.Reader, digest, ch)
}

func fill(dst []byte, n *big.Int) { n.FillBytes(dst) }
