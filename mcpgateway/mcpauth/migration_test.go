package mcpauth

import (
	"strings"
	"testing"

	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// TestAuthorizationServerMigration moves a server from one authorization
// server to another while the user holds a refreshable token of the
// first (2026-07-28, "Authorization Server Binding"): the next call's 401
// leads to a sign-in at the new server with a registration of its own,
// and nothing of the old server (its client id, access token, refresh
// token) reaches the new one, nor is the old refresh token used.
func TestAuthorizationServerMigration(t *testing.T) {
	as1, as2 := newTestAS(t, "as1"), newTestAS(t, "as2")
	rs := newTestRS(t, as1)
	store := &MemoryTokenStore{}
	a, c := newTestClient(t, rs, store, nil)
	if err := call(t, c, rs); err != nil {
		t.Fatalf("sign-in at the first server: %v", err)
	}
	old := a.peek()
	if old == nil || old.RefreshToken == "" || !strings.HasPrefix(old.ClientID, "as1-") {
		t.Fatalf("the first token = %+v; want a refreshable one of an as1 client", old.LogValue())
	}

	rs.setAS(as2, "")
	if err := call(t, c, rs); err != nil {
		t.Fatalf("call after the move: %v", err)
	}
	if r, _, _, _, _ := as2.counts(); r != 1 {
		t.Errorf("%d registrations at the new server, want 1", r)
	}
	saw := as2.saw()
	for what, secret := range map[string]string{"client id": old.ClientID, "access token": old.AccessToken, "refresh token": old.RefreshToken} {
		if strings.Contains(saw, secret) {
			t.Errorf("the old server's %s reached the new server:\n%s", what, saw)
		}
	}
	if _, n, _, _, _ := as1.counts(); n != 1 {
		t.Errorf("%d token requests at the old server; want 1 (the sign-in), no refresh after the move", n)
	}
	tok, err := store.Get(t.Context(), TokenKey{Server: "s", User: "alice"})
	if err != nil || tok.Issuer != as2.URL || !strings.HasPrefix(tok.ClientID, "as2-") {
		t.Errorf("stored token = %v, %v; want the new server's, of its own client", tok.LogValue(), err)
	}
}

// TestMigrationWithPreRegisteredClient checks that a client registered in
// advance at the old authorization server is not taken to the new one:
// the move is an error naming both, and the new server hears nothing.
func TestMigrationWithPreRegisteredClient(t *testing.T) {
	as1, as2 := newTestAS(t, "as1"), newTestAS(t, "as2")
	as1.clients["pre-client"], as2.clients["pre-client"] = "*", "*"
	rs := newTestRS(t, as1)
	_, c := newTestClient(t, rs, &MemoryTokenStore{}, &mcpconfig.OAuthConfig{ClientID: "pre-client"})
	if err := call(t, c, rs); err != nil {
		t.Fatalf("sign-in at the first server: %v", err)
	}
	rs.setAS(as2, "")
	err := call(t, c, rs)
	if err == nil || !strings.Contains(err.Error(), "oauth.client_id") || !strings.Contains(err.Error(), as1.URL) || !strings.Contains(err.Error(), as2.URL) {
		t.Errorf("call after the move = %v; want an error about oauth.client_id naming both servers", err)
	}
	if saw := as2.saw(); saw != "" {
		t.Errorf("the new server was asked:\n%s", saw)
	}
}
