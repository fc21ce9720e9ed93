package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/elysia-go/elysia/mcpgateway/mcpauth"
	"github.com/elysia-go/elysia/store"
)

// secretToken is a token whose secrets the token file must never hold in
// clear.
func secretToken() *mcpauth.Token {
	return &mcpauth.Token{AccessToken: "at-s3cret-0001", RefreshToken: "rt-s3cret-0002", ClientID: "client-1",
		ClientSecret: "cs-s3cret-0003", Resource: "https://mcp.example/mcp"}
}

var tokenSecrets = []string{"at-s3cret", "rt-s3cret", "cs-s3cret"}

var aliceDocs = mcpauth.TokenKey{Server: "docs", User: "alice"}

// checkTokenFile fails unless the file at path is mode 0600 and holds no
// secret of secretToken in clear.
func checkTokenFile(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file %s: %v, %v; want a file of mode 0600", path, fi.Mode(), err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range tokenSecrets {
		if strings.Contains(string(data), s) {
			t.Errorf("token file holds %s… in clear", s)
		}
	}
}

// getToken reads key's token with a new tokenFile, as the next command
// would, and fails unless it is secretToken's.
func getToken(t *testing.T, f *tokenFile, key mcpauth.TokenKey) {
	t.Helper()
	fresh := &tokenFile{path: f.path, keyText: f.keyText}
	got, err := fresh.Get(t.Context(), key)
	if err != nil || got.AccessToken != secretToken().AccessToken || got.ClientSecret != secretToken().ClientSecret {
		t.Fatalf("Get after Put = %v, %v", got, err)
	}
}

// TestTokenFileIsSealed: the token file holds no token or client secret in
// clear, its key file is 0600 beside it, and the next command reads the
// token back.
func TestTokenFileIsSealed(t *testing.T) {
	dir := t.TempDir()
	f := &tokenFile{path: filepath.Join(dir, "elysia", "tokens.json")}
	if err := f.Put(t.Context(), aliceDocs, secretToken()); err != nil {
		t.Fatal(err)
	}
	checkTokenFile(t, f.path)
	if fi, err := os.Stat(filepath.Join(dir, "elysia", "secret.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key file: %v, %v; want mode 0600", fi, err)
	}
	if fi, err := os.Stat(filepath.Dir(f.path)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("token folder: %v, %v; want mode 0700", fi, err)
	}
	getToken(t, f, aliceDocs)
	if err := f.Delete(t.Context(), aliceDocs); err != nil {
		t.Fatal(err)
	}
	if _, err := (&tokenFile{path: f.path}).Get(t.Context(), aliceDocs); !errors.Is(err, mcpauth.ErrNoToken) {
		t.Errorf("Get after Delete: %v, want ErrNoToken", err)
	}
}

// TestTokenFileStaleTemp: a world-readable tokens.json.tmp left behind (a
// crash, or another user in a shared folder) no longer makes the token
// file world-readable, and is removed.
func TestTokenFileStaleTemp(t *testing.T) {
	dir := t.TempDir()
	f := &tokenFile{path: filepath.Join(dir, "tokens.json")}
	if err := os.WriteFile(f.path+".tmp", []byte("stale"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(f.path+".tmp", 0o644); err != nil { // past the umask
		t.Fatal(err)
	}
	if err := f.Put(t.Context(), aliceDocs, secretToken()); err != nil {
		t.Fatal(err)
	}
	checkTokenFile(t, f.path)
	getToken(t, f, aliceDocs)
	if _, err := os.Lstat(f.path + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("the stale temporary file is still there: %v", err)
	}
}

// TestTokenFileTempSymlink: a symlink named like the temporary file is
// not written through: its target keeps its content.
func TestTokenFileTempSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(target, []byte("untouched"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := &tokenFile{path: filepath.Join(dir, "tokens.json")}
	if err := os.Symlink(target, f.path+".tmp"); err != nil {
		t.Fatal(err)
	}
	if err := f.Put(t.Context(), aliceDocs, secretToken()); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(target); err != nil || string(data) != "untouched" {
		t.Errorf("the symlink's target now holds %q, %v", data, err)
	}
	checkTokenFile(t, f.path)
	getToken(t, f, aliceDocs)
}

// TestTokenFileClearIsSealedOnce: a token file from before sealing loads,
// keeps every token, and is rewritten sealed at its first read.
func TestTokenFileClearIsSealedOnce(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tokens.json")
	bob := mcpauth.TokenKey{Server: "wiki", User: "bob"}
	clear, err := json.Marshal(map[string]*mcpauth.Token{tokenFileKey(aliceDocs): secretToken(), tokenFileKey(bob): {AccessToken: "bob-at"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, clear, 0o600); err != nil {
		t.Fatal(err)
	}
	f := &tokenFile{path: path}
	getToken(t, f, aliceDocs)
	checkTokenFile(t, path)
	if got, err := f.Get(t.Context(), bob); err != nil || got.AccessToken != "bob-at" {
		t.Errorf("bob's token after sealing: %v, %v", got, err)
	}
	getToken(t, f, aliceDocs)
}

// TestTokenFileKeys: with ELYSIA_SECRET_KEY no key file is made; a file
// sealed under another key is an error matching store.ErrWrongKey that
// names the file and no secret, and is left as it was; a key file others
// may read is refused.
func TestTokenFileKeys(t *testing.T) {
	dir := t.TempDir()
	keyA := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, store.SecretKeySize))
	keyB := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{2}, store.SecretKeySize))
	f := &tokenFile{path: filepath.Join(dir, "tokens.json"), keyText: keyA}
	if err := f.Put(t.Context(), aliceDocs, secretToken()); err != nil {
		t.Fatal(err)
	}
	checkTokenFile(t, f.path)
	getToken(t, f, aliceDocs)
	if _, err := os.Stat(filepath.Join(dir, store.KeyFileName)); !os.IsNotExist(err) {
		t.Errorf("a key file was made though ELYSIA_SECRET_KEY is set: %v", err)
	}
	before, _ := os.ReadFile(f.path)
	for name, other := range map[string]*tokenFile{
		"another ELYSIA_SECRET_KEY": {path: f.path, keyText: keyB},
		"the key file":              {path: f.path},
	} {
		_, err := other.Get(t.Context(), aliceDocs)
		if !errors.Is(err, store.ErrWrongKey) || !strings.Contains(err.Error(), f.path) {
			t.Errorf("%s: Get = %v, want ErrWrongKey naming the file", name, err)
		}
		if err := other.Put(t.Context(), aliceDocs, &mcpauth.Token{AccessToken: "x"}); !errors.Is(err, store.ErrWrongKey) {
			t.Errorf("%s: Put = %v, want ErrWrongKey", name, err)
		}
		for _, s := range append(tokenSecrets, keyA, keyB) {
			if err != nil && strings.Contains(err.Error(), s) {
				t.Errorf("%s: the error holds a secret: %v", name, err)
			}
		}
	}
	if after, _ := os.ReadFile(f.path); !bytes.Equal(before, after) {
		t.Errorf("a failed open changed the token file")
	}
	if err := (&tokenFile{path: f.path, keyText: "not base64!"}).Put(t.Context(), aliceDocs, secretToken()); err == nil || !strings.Contains(err.Error(), "ELYSIA_SECRET_KEY") {
		t.Errorf("Put with a bad ELYSIA_SECRET_KEY = %v", err)
	}

	open := &tokenFile{path: filepath.Join(t.TempDir(), "tokens.json")}
	key := filepath.Join(filepath.Dir(open.path), store.KeyFileName)
	if err := os.WriteFile(key, []byte(keyA+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(key, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := open.Put(t.Context(), aliceDocs, secretToken()); err == nil || !strings.Contains(err.Error(), "0644") {
		t.Errorf("Put with a world-readable key file = %v, want it refused", err)
	}
	if _, err := os.Stat(open.path); !os.IsNotExist(err) {
		t.Errorf("a token file was written with a world-readable key: %v", err)
	}
}
