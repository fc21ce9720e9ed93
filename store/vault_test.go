package store

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/elysia-go/elysia/internal/testenv"
)

func newKey(t *testing.T) []byte {
	t.Helper()
	k := make([]byte, SecretKeySize)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return k
}

func openVault(t *testing.T, s *Store, key []byte) *Vault {
	t.Helper()
	v, err := OpenVault(t.Context(), s, key)
	if err != nil {
		t.Fatalf("OpenVault: %v", err)
	}
	return v
}

func TestVault(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			for _, tc := range []struct {
				name string
				run  func(t *testing.T, dsn newDSN)
			}{
				{"round trip", testVaultRoundTrip},
				{"never in clear", testVaultNeverInClear},
				{"wrong key", testVaultWrongKey},
				{"row bound", testVaultRowBound},
				{"pending sign-ins", testVaultPending},
				{"secrets capped per user", testVaultSecretCap},
			} {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					tc.run(t, b.dsn)
				})
			}
		})
	}
}

func testVaultRoundTrip(t *testing.T, newDSN newDSN) {
	t.Helper()
	ctx := t.Context()
	v := openVault(t, openStore(t, newDSN(t)), newKey(t))
	if _, err := v.Token(ctx, "gh", "alice"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Token before Put = %v, want ErrNotFound", err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(v.PutToken(ctx, "gh", "alice", []byte(`{"access_token":"a1"}`)))
	must(v.PutToken(ctx, "gh", "alice", []byte(`{"access_token":"a2"}`)))
	must(v.PutToken(ctx, "gh", "bob", []byte(`{"access_token":"b1"}`)))
	must(v.PutSecret(ctx, "alice", "gh", []byte("s-alice")))
	for _, tc := range []struct {
		name      string
		get       func() ([]byte, error)
		want      string
		wantError error
	}{
		{"alice's token replaced", func() ([]byte, error) { return v.Token(ctx, "gh", "alice") }, `{"access_token":"a2"}`, nil},
		{"bob's token", func() ([]byte, error) { return v.Token(ctx, "gh", "bob") }, `{"access_token":"b1"}`, nil},
		{"other server", func() ([]byte, error) { return v.Token(ctx, "jira", "alice") }, "", ErrNotFound},
		{"alice's secret", func() ([]byte, error) { return v.Secret(ctx, "alice", "gh") }, "s-alice", nil},
		{"not bob's secret", func() ([]byte, error) { return v.Secret(ctx, "bob", "gh") }, "", ErrNotFound},
	} {
		got, err := tc.get()
		if !errors.Is(err, tc.wantError) || string(got) != tc.want {
			t.Errorf("%s: got %q, %v; want %q, %v", tc.name, got, err, tc.want, tc.wantError)
		}
	}
	must(v.DeleteToken(ctx, "gh", "alice"))
	must(v.DeleteToken(ctx, "gh", "alice")) // a missing one is fine
	must(v.DeleteSecret(ctx, "alice", "gh"))
	if _, err := v.Token(ctx, "gh", "alice"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Token after Delete = %v, want ErrNotFound", err)
	}
	if _, err := v.Secret(ctx, "alice", "gh"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Secret after Delete = %v, want ErrNotFound", err)
	}
	if got, err := v.Token(ctx, "gh", "bob"); err != nil || string(got) != `{"access_token":"b1"}` {
		t.Errorf("bob's token after alice's Delete = %q, %v", got, err)
	}
}

// testVaultNeverInClear reads what the database holds: on SQLite every
// byte of its files, on PostgreSQL every sealed column.
func testVaultNeverInClear(t *testing.T, newDSN newDSN) {
	t.Helper()
	ctx := t.Context()
	dsn := newDSN(t)
	s := openStore(t, dsn)
	v := openVault(t, s, newKey(t))
	const token, secret = "tok-3c1d9f8a7e", "sec-55aa01f2c9"
	if err := v.PutToken(ctx, "gh", "alice", []byte(`{"access_token":"`+token+`"}`)); err != nil {
		t.Fatal(err)
	}
	if err := v.PutSecret(ctx, "alice", "API_KEY", []byte(secret)); err != nil {
		t.Fatal(err)
	}
	if s.dialect == dialectSQLite {
		if err := s.Close(); err != nil { // and checkpoint the WAL into the file
			t.Fatal(err)
		}
		files, _ := filepath.Glob(dsn + "*")
		if len(files) == 0 {
			t.Fatalf("no database files at %s", dsn)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, clear := range []string{token, secret} {
				if bytes.Contains(b, []byte(clear)) {
					t.Errorf("%s holds %q in clear", filepath.Base(f), clear)
				}
			}
		}
		return
	}
	for _, table := range []string{"oauth_tokens", "user_secrets"} {
		rows, err := s.db.QueryContext(ctx, "SELECT sealed FROM "+table)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for rows.Next() {
			var sealed string
			if err := rows.Scan(&sealed); err != nil {
				t.Fatal(err)
			}
			n++
			if strings.Contains(sealed, token) || strings.Contains(sealed, secret) || !strings.HasPrefix(sealed, sealPrefix) {
				t.Errorf("%s holds %q", table, sealed)
			}
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Errorf("%s has %d rows, want 1", table, n)
		}
	}
}

func testVaultWrongKey(t *testing.T, newDSN newDSN) {
	t.Helper()
	dsn := newDSN(t)
	s := openStore(t, dsn)
	v := openVault(t, s, newKey(t))
	if err := v.PutToken(t.Context(), "gh", "alice", []byte("tok-secret")); err != nil {
		t.Fatal(err)
	}
	s2 := openStore(t, dsn) // a restart, or another replica, with another key
	_, err := OpenVault(t.Context(), s2, newKey(t))
	if !errors.Is(err, ErrWrongKey) {
		t.Fatalf("OpenVault with another key = %v, want ErrWrongKey", err)
	}
	if strings.Contains(err.Error(), "tok-secret") || !strings.Contains(err.Error(), "ELYSIA_SECRET_KEY") {
		t.Errorf("error %q should name the setting and hold no value", err)
	}
}

// testVaultRowBound moves a sealed value to another row: it must not open
// there, so that one user's token cannot be made another's.
func testVaultRowBound(t *testing.T, newDSN newDSN) {
	t.Helper()
	ctx := t.Context()
	s := openStore(t, newDSN(t))
	v := openVault(t, s, newKey(t))
	if err := v.PutToken(ctx, "gh", "alice", []byte("alice-token")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.ExecContext(ctx, `UPDATE oauth_tokens SET user_id = 'bob'`); err != nil {
		t.Fatal(err)
	}
	got, err := v.Token(ctx, "gh", "bob")
	if !errors.Is(err, ErrWrongKey) || got != nil {
		t.Errorf("moved token = %q, %v; want ErrWrongKey", got, err)
	}
}

func TestSecretKey(t *testing.T) {
	good := base64.StdEncoding.EncodeToString(newKey(t))
	for _, tc := range []struct {
		name, text, wantErr string
	}{
		{"std base64", good, ""},
		{"raw url base64", strings.TrimRight(strings.NewReplacer("+", "-", "/", "_").Replace(good), "="), ""},
		{"not base64", "not a key!", "not base64"},
		{"short", base64.StdEncoding.EncodeToString([]byte("sixteen bytes ok")), "16 bytes; want 32"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openStore(t, filepath.Join(t.TempDir(), "elysia.db"))
			key, err := s.SecretKey(tc.text)
			if tc.wantErr == "" {
				if err != nil || len(key) != SecretKeySize {
					t.Fatalf("SecretKey = %d bytes, %v", len(key), err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "ELYSIA_SECRET_KEY") {
				t.Fatalf("SecretKey error = %v, want one naming ELYSIA_SECRET_KEY and %q", err, tc.wantErr)
			}
			if strings.Contains(err.Error(), tc.text) {
				t.Errorf("error repeats the value: %v", err)
			}
		})
	}
}

func TestSecretKeyFile(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, filepath.Join(dir, "elysia.db"))
	key, err := s.SecretKey("")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, KeyFileName)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("key file mode = %04o, want 0600", perm)
	}
	again, err := s.SecretKey("")
	if err != nil || !bytes.Equal(again, key) {
		t.Fatalf("second SecretKey = %v (same key: %t), want the file's key", err, bytes.Equal(again, key))
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SecretKey(""); err == nil || !strings.Contains(err.Error(), "others may read it") {
		t.Errorf("SecretKey with a 0644 key file = %v, want it refused", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("garbage\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SecretKey(""); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("SecretKey with a bad key file = %v, want an error naming it", err)
	}
}

func TestSecretKeyPostgresNeedsEnv(t *testing.T) {
	s := openStore(t, testenv.PostgresDSN(t))
	if _, err := s.SecretKey(""); !errors.Is(err, ErrNoSecretKey) || !strings.Contains(err.Error(), "ELYSIA_SECRET_KEY") {
		t.Errorf("SecretKey on PostgreSQL without a key = %v, want an error naming ELYSIA_SECRET_KEY", err)
	}
}

// testVaultSecretCap: a user keeps at most MaxSecretsPerUser secrets: a new
// name beyond them is refused with ErrTooManySecrets and changes nothing,
// replacing a kept one still works, and another user is not affected.
func testVaultSecretCap(t *testing.T, newDSN newDSN) {
	t.Helper()
	ctx := t.Context()
	v := openVault(t, openStore(t, newDSN(t)), newKey(t))
	for i := range MaxSecretsPerUser {
		if err := v.PutSecret(ctx, "alice", fmt.Sprintf("S%d", i), []byte(fmt.Sprintf("v%d", i))); err != nil {
			t.Fatalf("secret %d: %v", i, err)
		}
	}
	err := v.PutSecret(ctx, "alice", "ONE_MORE", []byte("x"))
	if !errors.Is(err, ErrTooManySecrets) || !strings.Contains(err.Error(), strconv.Itoa(MaxSecretsPerUser)) {
		t.Fatalf("secret %d: %v, want ErrTooManySecrets naming the cap", MaxSecretsPerUser+1, err)
	}
	if _, err := v.Secret(ctx, "alice", "ONE_MORE"); !errors.Is(err, ErrNotFound) {
		t.Errorf("the refused secret: %v, want ErrNotFound", err)
	}
	if err := v.PutSecret(ctx, "alice", "S7", []byte("replaced")); err != nil {
		t.Errorf("replacing a kept secret at the cap: %v", err)
	}
	if err := v.PutSecret(ctx, "bob", "S0", []byte("bob's")); err != nil {
		t.Errorf("another user's first secret: %v", err)
	}
	for i := range MaxSecretsPerUser {
		want := fmt.Sprintf("v%d", i)
		if i == 7 {
			want = "replaced"
		}
		if got, err := v.Secret(ctx, "alice", fmt.Sprintf("S%d", i)); err != nil || string(got) != want {
			t.Errorf("secret S%d = %q, %v; want %q", i, got, err, want)
		}
	}
}
