package adapter

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/mcpgateway/mcpauth"
	"github.com/elysia-go/elysia/store"
	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/tree"
	"github.com/elysia-go/elysia/web"
	"github.com/elysia-go/elysia/web/signin"
)

// openTestVault returns a Vault over a fresh SQLite file, sealed with the
// key file beside it.
func openTestVault(t *testing.T) *store.Vault {
	t.Helper()
	db, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "elysia.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	v, err := OpenVault(t.Context(), db, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestUserSecretsCap checks, in memory and in the Vault, that a user keeps
// at most store.MaxSecretsPerUser secrets (web's ErrLimit beyond, naming
// the cap), that replacing one and other users are not refused, and that
// the gateways read what web set.
func TestUserSecretsCap(t *testing.T) {
	for _, c := range []struct {
		name  string
		vault func(t *testing.T) *store.Vault
	}{
		{"memory", func(*testing.T) *store.Vault { return nil }},
		{"vault", openTestVault},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := t.Context()
			s := &UserSecrets{Vault: c.vault(t)}
			g := GatewaySecrets{Secrets: s}
			if _, err := g.Secret(ctx, "alice", "TOKEN"); !errors.Is(err, mcpgateway.ErrNoSecret) {
				t.Fatalf("a secret never set: %v, want ErrNoSecret", err)
			}
			for i := range store.MaxSecretsPerUser {
				if err := s.PutSecret(ctx, "alice", fmt.Sprintf("S%d", i), "v"); err != nil {
					t.Fatalf("secret %d: %v", i, err)
				}
			}
			err := s.PutSecret(ctx, "alice", "ONE_MORE", "v")
			if !errors.Is(err, web.ErrLimit) || !errors.Is(err, store.ErrTooManySecrets) {
				t.Fatalf("secret %d: %v, want web.ErrLimit and store.ErrTooManySecrets", store.MaxSecretsPerUser+1, err)
			}
			if err := s.PutSecret(ctx, "alice", "S0", "replaced"); err != nil {
				t.Errorf("replacing a secret at the cap: %v", err)
			}
			if err := s.PutSecret(ctx, "bob", "S0", "bob's"); err != nil {
				t.Errorf("another user at alice's cap: %v", err)
			}
			if got, err := g.Secret(ctx, "alice", "S0"); err != nil || got != "replaced" {
				t.Errorf("the gateways read %q, %v; want the replaced value", got, err)
			}
			if err := s.DeleteSecret(ctx, "alice", "S1"); err != nil {
				t.Fatal(err)
			}
			if err := s.DeleteSecret(ctx, "alice", "S1"); err != nil {
				t.Errorf("deleting twice: %v", err)
			}
			if err := s.PutSecret(ctx, "alice", "ONE_MORE", "v"); err != nil {
				t.Errorf("after a delete: %v", err)
			}
		})
	}
}

// TestVaultTokens puts, reads and deletes a token through the Vault.
func TestVaultTokens(t *testing.T) {
	ctx := t.Context()
	ts := VaultTokens{Vault: openTestVault(t)}
	key := mcpauth.TokenKey{Server: "notes", User: "alice"}
	if _, err := ts.Get(ctx, key); !errors.Is(err, mcpauth.ErrNoToken) {
		t.Fatalf("Get before Put: %v, want ErrNoToken", err)
	}
	want := &mcpauth.Token{AccessToken: "at", RefreshToken: "rt", TokenType: "Bearer", Expiry: time.Now().Add(time.Hour).UTC().Truncate(time.Second)}
	if err := ts.Put(ctx, key, want); err != nil {
		t.Fatal(err)
	}
	got, err := ts.Get(ctx, key)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Get = %+v, %v; want %+v", got, err, want)
	}
	if _, err := ts.Get(ctx, mcpauth.TokenKey{Server: "notes", User: "bob"}); !errors.Is(err, mcpauth.ErrNoToken) {
		t.Errorf("bob's token: %v, want ErrNoToken", err)
	}
	if err := ts.Put(ctx, key, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Get(ctx, key); !errors.Is(err, mcpauth.ErrNoToken) {
		t.Errorf("Get after Put(nil): %v, want ErrNoToken", err)
	}
	if err := ts.Delete(ctx, key); err != nil {
		t.Errorf("Delete of a missing token: %v", err)
	}
}

// TestVaultPendingTakenOnce checks that a started sign-in is taken once,
// and that the gateways' caps reach the Vault.
func TestVaultPendingTakenOnce(t *testing.T) {
	ctx := t.Context()
	p := VaultPending{Vault: openTestVault(t)}
	want := &mcpauth.PendingSignIn{Server: "notes", User: "alice", Verifier: "v", ClientID: "c", RedirectURI: "http://127.0.0.1/oauth/callback/notes"}
	if err := p.Put(ctx, "state-1", want, time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	got, err := p.Take(ctx, "state-1")
	if err != nil || got.Server != want.Server || got.User != want.User || got.Verifier != want.Verifier {
		t.Fatalf("Take = %+v, %v; want %+v", got, err, want)
	}
	if _, err := p.Take(ctx, "state-1"); !errors.Is(err, mcpauth.ErrUnknownState) {
		t.Errorf("second Take: %v, want ErrUnknownState", err)
	}
	for i := range mcpauth.MaxPendingSignInsPerUser {
		if err := p.Put(ctx, fmt.Sprintf("s%d", i), want, time.Now().Add(time.Minute)); err != nil {
			t.Fatalf("sign-in %d: %v", i, err)
		}
	}
	if err := p.Room(ctx, "alice"); !errors.Is(err, mcpauth.ErrTooManySignIns) {
		t.Errorf("Room at the cap: %v, want ErrTooManySignIns", err)
	}
	if err := p.Put(ctx, "one-more", want, time.Now().Add(time.Minute)); !errors.Is(err, mcpauth.ErrTooManySignIns) {
		t.Errorf("Put beyond the cap: %v, want ErrTooManySignIns", err)
	}
	if err := p.Room(ctx, "bob"); err != nil {
		t.Errorf("Room for bob: %v", err)
	}
}

// TestSignInsRefusals checks the errors web maps: an unknown server (404),
// a stdio server (422: it takes secrets, not a sign-in) and a state no
// sign-in gave (400).
func TestSignInsRefusals(t *testing.T) {
	d := newDiscovery(t, `{"servers": {"local": {"command": "/bin/true"}}}`, nil)
	s := NewSignIns(d, &mcpauth.MemoryPendingSignIns{})
	ctx := t.Context()
	if _, _, err := s.StartSignIn(ctx, signin.Start{Server: "nope", User: "alice", CallbackOrigin: "http://127.0.0.1:1"}); !errors.Is(err, tree.ErrNotFound) {
		t.Errorf("unknown server: %v, want tree.ErrNotFound", err)
	}
	_, _, err := s.StartSignIn(ctx, signin.Start{Server: "mcp_local", User: "alice", CallbackOrigin: "http://127.0.0.1:1"})
	if !errors.Is(err, tools.ErrInvalidArguments) {
		t.Errorf("stdio server: %v, want tools.ErrInvalidArguments", err)
	}
	if _, _, err := s.FinishSignIn(ctx, signin.Callback{State: "never-given", Code: "c"}); !errors.Is(err, signin.ErrUnknownState) {
		t.Errorf("unknown state: %v, want signin.ErrUnknownState", err)
	}
	if err := s.SignOut(ctx, "nope", "alice"); !errors.Is(err, tree.ErrNotFound) {
		t.Errorf("sign out of an unknown server: %v, want tree.ErrNotFound", err)
	}
}
