package mcpgateway

import (
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/elysia-go/elysia/internal/testenv"
	"github.com/elysia-go/elysia/mcpgateway/mcpauth"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// signedIn returns a gateway on f's server with alice signed in, her
// token, and the gateway's log.
func signedIn(t *testing.T, f *authFixture, cfg mcpconfig.ServerConfig) (*Gateway, *mcpauth.MemoryTokenStore, *mcpauth.Token, *testenv.SyncBuffer) {
	t.Helper()
	logs := &testenv.SyncBuffer{}
	store := &mcpauth.MemoryTokenStore{}
	g := newGateway(t, cfg, &Options{Tokens: store, Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err := g.SignIn(t.Context(), "alice", mcpauth.FetchBrowser{}); err != nil {
		t.Fatalf("SignIn: %v", err)
	}
	if got, err := whoami(t, g, "alice"); err != nil || got != "subject-1" {
		t.Fatalf("whoami = %q, %v", got, err)
	}
	tok, err := store.Get(t.Context(), mcpauth.TokenKey{Server: cfg.Name, User: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	return g, store, tok, logs
}

func TestOAuthSignOutRevokes(t *testing.T) {
	f := newAuthFixture(t)
	g, store, tok, logs := signedIn(t, f, f.config("docs"))
	if err := g.SignOut(t.Context(), "alice"); err != nil {
		t.Fatalf("SignOut: %v", err)
	}
	var got [][3]string
	for _, r := range f.revocations() {
		got = append(got, [3]string{r.Get("token"), r.Get("token_type_hint"), r.Get("client_id")})
	}
	want := [][3]string{{tok.RefreshToken, "refresh_token", "dyn-client"}, {tok.AccessToken, "access_token", "dyn-client"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("revocation requests (-want +got):\n%s", diff)
	}
	if _, err := store.Get(t.Context(), mcpauth.TokenKey{Server: "docs", User: "alice"}); !errors.Is(err, mcpauth.ErrNoToken) {
		t.Errorf("token after sign-out: %v, want ErrNoToken", err)
	}
	// The server no longer takes the token, and the user must sign in.
	if _, err := whoami(t, g, "alice"); !errors.Is(err, mcpauth.ErrSignInRequired) {
		t.Errorf("alice after sign-out: %v, want ErrSignInRequired", err)
	}
	if strings.Contains(logs.String(), tok.AccessToken) || strings.Contains(logs.String(), tok.RefreshToken) {
		t.Error("the log carries a token value")
	}
}

// TestOAuthSignOutForgetsWhateverRevocationDoes checks that a sign-out
// forgets the token when the authorization server offers no revocation,
// answers with an error, or never answers (bounded by connect_timeout);
// the failures are logged without the token.
func TestOAuthSignOutForgetsWhateverRevocationDoes(t *testing.T) {
	tests := []struct {
		name     string
		set      func(f *authFixture)
		requests int
		logged   string
	}{
		{"no revocation endpoint", func(f *authFixture) { f.noRevocation = true }, 0, ""},
		{"revocation fails", func(f *authFixture) { f.revokeFails = http.StatusServiceUnavailable }, 2,
			"revoke the refresh token: revocation endpoint answered 503 Service Unavailable"},
		{"revocation hangs", func(f *authFixture) { f.revokeHangs = true }, 0, "could not revoke the token at sign-out"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newAuthFixture(t)
			cfg := f.config("docs")
			cfg.ConnectTimeout = 300 * time.Millisecond
			g, store, tok, logs := signedIn(t, f, cfg)
			tt.set(f)
			start := time.Now()
			if err := g.SignOut(t.Context(), "alice"); err != nil {
				t.Fatalf("SignOut: %v", err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("SignOut took %v; revocation is bounded by connect_timeout", d)
			}
			if _, err := store.Get(t.Context(), mcpauth.TokenKey{Server: "docs", User: "alice"}); !errors.Is(err, mcpauth.ErrNoToken) {
				t.Errorf("token after sign-out: %v, want ErrNoToken", err)
			}
			if n := len(f.revocations()); n != tt.requests {
				t.Errorf("revocation requests = %d, want %d", n, tt.requests)
			}
			if !strings.Contains(logs.String(), tt.logged) {
				t.Errorf("log lacks %q:\n%s", tt.logged, logs)
			}
			if strings.Contains(logs.String(), tok.AccessToken) || strings.Contains(logs.String(), tok.RefreshToken) {
				t.Error("the log carries a token value")
			}
		})
	}
}
