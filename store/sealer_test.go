package store

import (
	"bytes"
	"strings"
	"testing"
)

// TestSealer: a sealed value opens with its key and additional data only,
// never holds the value in clear, and a changed one does not open.
func TestSealer(t *testing.T) {
	a, err := NewSealer(bytes.Repeat([]byte{1}, SecretKeySize))
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewSealer(bytes.Repeat([]byte{2}, SecretKeySize))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewSealer([]byte("short")); err == nil {
		t.Error("NewSealer accepted a 5-byte key")
	}
	sealed := a.Seal([]byte("s3cret value"), []byte("ad"))
	if !IsSealed(sealed) || strings.Contains(sealed, "s3cret") || sealed == a.Seal([]byte("s3cret value"), []byte("ad")) {
		t.Fatalf("Seal = %q: want the sealed form, a fresh nonce, no clear value", sealed)
	}
	if got, err := a.Open(sealed, []byte("ad")); err != nil || string(got) != "s3cret value" {
		t.Fatalf("Open = %q, %v", got, err)
	}
	tampered := sealed[:len(sealed)-4] + "AAA="
	for name, open := range map[string]func() ([]byte, error){
		"another key": func() ([]byte, error) { return b.Open(sealed, []byte("ad")) },
		"another ad":  func() ([]byte, error) { return a.Open(sealed, []byte("other")) },
		"changed":     func() ([]byte, error) { return a.Open(tampered, []byte("ad")) },
		"not sealed":  func() ([]byte, error) { return a.Open("s3cret value", []byte("ad")) },
		"not base64":  func() ([]byte, error) { return a.Open(sealPrefix+"!!", []byte("ad")) },
	} {
		if got, err := open(); err == nil || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: Open = %q, %v; want an error without the value", name, got, err)
		}
	}
}
