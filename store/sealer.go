package store

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// Sealer seals values with AES-256-GCM under one key, with a random nonce
// per value and additional data that binds a sealed value to where it is
// kept. A [Vault] seals with one; NewSealer gives one for values kept
// outside a store (the CLI's token file). A Sealer is safe for concurrent
// use, and its errors never carry a value.
type Sealer struct{ aead cipher.AEAD }

// NewSealer returns the Sealer of key (SecretKeySize bytes, see
// ParseSecretKey and KeyFile).
func NewSealer(key []byte) (*Sealer, error) {
	if len(key) != SecretKeySize {
		return nil, fmt.Errorf("secret key is %d bytes; want %d", len(key), SecretKeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Sealer{aead: aead}, nil
}

// Seal encrypts value with a fresh nonce, binding ad. The result is text:
// a format prefix, then base64 of the nonce and the ciphertext.
func (s *Sealer) Seal(value, ad []byte) string {
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(value)+s.aead.Overhead())
	_, _ = rand.Read(nonce) // never fails (crypto/rand)
	return sealPrefix + base64.StdEncoding.EncodeToString(s.aead.Seal(nonce, nonce, value, ad))
}

// Open decrypts what Seal returned for the same ad. A value sealed under
// another key, or with other additional data, or changed, does not open.
func (s *Sealer) Open(sealed string, ad []byte) ([]byte, error) {
	rest, ok := strings.CutPrefix(sealed, sealPrefix)
	if !ok {
		return nil, errors.New("unknown format")
	}
	b, err := base64.StdEncoding.DecodeString(rest)
	if err != nil || len(b) < s.aead.NonceSize() {
		return nil, errors.New("malformed value")
	}
	n := s.aead.NonceSize()
	out, err := s.aead.Open(nil, b[:n], b[n:], ad)
	if err != nil {
		return nil, errors.New("authentication failed")
	}
	return out, nil
}

// IsSealed reports whether text has the form Seal gives (it may still not
// open).
func IsSealed(text string) bool { return strings.HasPrefix(text, sealPrefix) }

// KeyFile returns the key kept in the file at path: created with mode 0600
// (O_EXCL) and a random key when missing; refused when others than its
// owner may read or write it.
func KeyFile(path string) ([]byte, error) { return keyFile(path) }
