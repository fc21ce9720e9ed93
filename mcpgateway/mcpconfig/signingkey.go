package mcpconfig

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
)

// ParseSigningKey reads a PEM private key and returns it with the JWS
// algorithm it signs with. Errors never quote the key.
func ParseSigningKey(pemText string) (crypto.Signer, string, error) {
	block, _ := pem.Decode([]byte(pemText))
	if block == nil {
		return nil, "", errors.New("not a PEM private key")
	}
	var key any
	var err error
	switch block.Type {
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	}
	if err != nil {
		return nil, "", fmt.Errorf("cannot read the %s block (want PKCS #8, SEC 1 or PKCS #1)", block.Type)
	}
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		switch k.Curve {
		case elliptic.P256():
			return k, "ES256", nil
		case elliptic.P384():
			return k, "ES384", nil
		case elliptic.P521():
			return k, "ES512", nil
		}
		return nil, "", errors.New("unsupported EC curve (want P-256, P-384 or P-521)")
	case *rsa.PrivateKey:
		if k.N.BitLen() < 2048 {
			return nil, "", errors.New("RSA key shorter than 2048 bits")
		}
		return k, "RS256", nil
	case ed25519.PrivateKey:
		return k, "EdDSA", nil
	}
	return nil, "", fmt.Errorf("unsupported key type %T", key)
}
