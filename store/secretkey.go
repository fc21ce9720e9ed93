package store

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// SecretKeySize is the size in bytes of the key that seals tokens and
// secrets (AES-256).
const SecretKeySize = 32

// KeyFileName is the name of the key file [Store.SecretKey] keeps beside a
// SQLite database.
const KeyFileName = "secret.key"

// ParseSecretKey decodes a key given as text (ELYSIA_SECRET_KEY): standard
// or URL base64, padded or not, of exactly SecretKeySize bytes. Its errors
// never repeat the value.
func ParseSecretKey(text string) ([]byte, error) {
	text = strings.TrimSpace(text)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		key, err := enc.DecodeString(text)
		if err != nil {
			continue
		}
		if len(key) != SecretKeySize {
			return nil, fmt.Errorf("the key is %d bytes; want %d bytes, base64-encoded (openssl rand -base64 32)", len(key), SecretKeySize)
		}
		return key, nil
	}
	return nil, fmt.Errorf("the key is not base64; want %d random bytes, base64-encoded (openssl rand -base64 32)", SecretKeySize)
}

// SecretKey returns the key that seals the store's tokens and secrets.
// text is ELYSIA_SECRET_KEY's value: when set, it is the key (see
// ParseSecretKey). Otherwise a SQLite store uses the file KeyFileName
// beside its database, created with mode 0600 and a random key on first
// use; a key file that others than its owner may read or write is refused.
// An in-memory SQLite store gets a random key that lasts as long as the
// process. A PostgreSQL store needs text (its replicas must share one
// key): without it the error matches ErrNoSecretKey.
func (s *Store) SecretKey(text string) ([]byte, error) {
	if strings.TrimSpace(text) != "" {
		key, err := ParseSecretKey(text)
		if err != nil {
			return nil, fmt.Errorf("ELYSIA_SECRET_KEY: %w", err)
		}
		return key, nil
	}
	if s.dialect == dialectPostgres {
		return nil, fmt.Errorf("%w: a PostgreSQL store needs ELYSIA_SECRET_KEY, so that every replica seals and opens tokens and secrets with one key", ErrNoSecretKey)
	}
	path := strings.TrimPrefix(s.where, "sqlite:")
	if path == ":memory:" || path == "" {
		key := make([]byte, SecretKeySize)
		_, _ = rand.Read(key) // never fails (crypto/rand)
		return key, nil
	}
	return keyFile(filepath.Join(filepath.Dir(path), KeyFileName))
}

// keyFile reads the key file at path, creating it when missing.
func keyFile(path string) ([]byte, error) {
	key, err := readKeyFile(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	key = make([]byte, SecretKeySize)
	_, _ = rand.Read(key) // never fails (crypto/rand)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) { // another process made it first
		return readKeyFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("create key file: %w", err)
	}
	_, err = f.WriteString(base64.StdEncoding.EncodeToString(key) + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path) // best effort: a half-written key must not be used
		return nil, fmt.Errorf("write key file %s: %w", path, err)
	}
	return key, nil
}

// readKeyFile reads an existing key file, refusing one others may read.
func readKeyFile(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("key file %s is a folder", path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("key file %s has mode %04o: others may read it; make it 0600 (chmod 600) or set ELYSIA_SECRET_KEY", path, perm)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read key file: %w", err)
	}
	key, err := ParseSecretKey(string(b))
	if err != nil {
		return nil, fmt.Errorf("key file %s: %w", path, err)
	}
	return key, nil
}
