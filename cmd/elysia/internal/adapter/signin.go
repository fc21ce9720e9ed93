package adapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/elysia-go/elysia/discovery"
	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/mcpgateway/mcpauth"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
	"github.com/elysia-go/elysia/store"
	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/web"
	"github.com/elysia-go/elysia/web/signin"
)

// VaultTokens is the gateways' TokenStore over the store's Vault: a token
// is its JSON, sealed, so every replica sharing the database and the key
// sees it.
type VaultTokens struct{ Vault *store.Vault }

var _ mcpauth.TokenStore = VaultTokens{}

// Get implements mcpauth.TokenStore.
func (t VaultTokens) Get(ctx context.Context, key mcpauth.TokenKey) (*mcpauth.Token, error) {
	b, err := t.Vault.Token(ctx, key.Server, key.User)
	if errors.Is(err, store.ErrNotFound) {
		return nil, mcpauth.ErrNoToken
	}
	if err != nil {
		return nil, err
	}
	var tok mcpauth.Token
	if err := json.Unmarshal(b, &tok); err != nil {
		// The error of json.Unmarshal may quote the input: not repeated.
		return nil, fmt.Errorf("token of user %q for server %q is not a token", key.User, key.Server)
	}
	return &tok, nil
}

// Put implements mcpauth.TokenStore; a nil tok deletes.
func (t VaultTokens) Put(ctx context.Context, key mcpauth.TokenKey, tok *mcpauth.Token) error {
	if tok == nil {
		return t.Delete(ctx, key)
	}
	b, err := json.Marshal(tok)
	if err != nil {
		return fmt.Errorf("encode token of user %q for server %q: %w", key.User, key.Server, err)
	}
	return t.Vault.PutToken(ctx, key.Server, key.User, b)
}

// Delete implements mcpauth.TokenStore.
func (t VaultTokens) Delete(ctx context.Context, key mcpauth.TokenKey) error {
	return t.Vault.DeleteToken(ctx, key.Server, key.User)
}

// VaultPending is the gateways' PendingSignIns over the store's Vault: a
// started web sign-in is its JSON, sealed, so the callback may reach any
// replica sharing the database and the key.
type VaultPending struct{ Vault *store.Vault }

var _ mcpauth.PendingSignIns = VaultPending{}

// Put implements mcpauth.PendingSignIns.
func (p VaultPending) Put(ctx context.Context, state string, ps *mcpauth.PendingSignIn, expires time.Time) error {
	b, err := json.Marshal(ps)
	if err != nil {
		return fmt.Errorf("encode the sign-in of user %q for server %q: %w", ps.User, ps.Server, err)
	}
	err = p.Vault.PutPending(ctx, state, ps.User, b, expires, pendingCaps)
	if errors.Is(err, store.ErrTooMany) {
		return fmt.Errorf("%w (%w)", err, mcpauth.ErrTooManySignIns)
	}
	return err
}

// pendingCaps are the caps of the sign-ins the Vault keeps waiting: the
// gateways', for every replica together.
var pendingCaps = store.PendingCaps{PerUser: mcpauth.MaxPendingSignInsPerUser, Total: mcpauth.MaxPendingSignIns}

// Room implements mcpauth.PendingSignIns.
func (p VaultPending) Room(ctx context.Context, user string) error {
	err := p.Vault.PendingRoom(ctx, user, pendingCaps)
	if errors.Is(err, store.ErrTooMany) {
		return fmt.Errorf("%w (%w)", err, mcpauth.ErrTooManySignIns)
	}
	return err
}

// Take implements mcpauth.PendingSignIns.
func (p VaultPending) Take(ctx context.Context, state string) (*mcpauth.PendingSignIn, error) {
	b, err := p.Vault.TakePending(ctx, state)
	if errors.Is(err, store.ErrNotFound) {
		return nil, mcpauth.ErrUnknownState
	}
	if err != nil {
		return nil, err
	}
	var ps mcpauth.PendingSignIn
	if err := json.Unmarshal(b, &ps); err != nil {
		// The error of json.Unmarshal may quote the input: not repeated.
		return nil, errors.New("a kept sign-in is not a sign-in")
	}
	return &ps, nil
}

// UserSecrets keeps users' own secrets: sealed in the store's Vault, or
// in memory when the service runs without a store.
type UserSecrets struct {
	// Vault keeps the secrets; nil means memory. Set it before the first
	// use.
	Vault *store.Vault

	// mu guards mem.
	mu  sync.Mutex
	mem map[[2]string]string
}

var _ signin.UserSecrets = (*UserSecrets)(nil)

// PutSecret implements signin.UserSecrets: a user keeps at most
// store.MaxSecretsPerUser secrets, in the store as in memory.
func (s *UserSecrets) PutSecret(ctx context.Context, user, name, value string) error {
	if s.Vault != nil {
		err := s.Vault.PutSecret(ctx, user, name, []byte(value))
		if errors.Is(err, store.ErrTooManySecrets) {
			return categorized{web.ErrLimit, err}
		}
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mem == nil {
		s.mem = make(map[[2]string]string)
	}
	if _, kept := s.mem[[2]string{user, name}]; !kept {
		n := 0
		for k := range s.mem {
			if k[0] == user {
				n++
			}
		}
		if n >= store.MaxSecretsPerUser {
			return categorized{web.ErrLimit, fmt.Errorf("user %q keeps %d secrets, the most a user may keep (%d): delete one before adding %q: %w",
				user, n, store.MaxSecretsPerUser, name, store.ErrTooManySecrets)}
		}
	}
	s.mem[[2]string{user, name}] = value
	return nil
}

// DeleteSecret implements signin.UserSecrets.
func (s *UserSecrets) DeleteSecret(ctx context.Context, user, name string) error {
	if s.Vault != nil {
		return s.Vault.DeleteSecret(ctx, user, name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.mem, [2]string{user, name})
	return nil
}

// Secret returns user's secret name, and whether there is one.
func (s *UserSecrets) Secret(ctx context.Context, user, name string) (string, bool, error) {
	if s.Vault != nil {
		b, err := s.Vault.Secret(ctx, user, name)
		if errors.Is(err, store.ErrNotFound) {
			return "", false, nil
		}
		if err != nil {
			return "", false, err
		}
		return string(b), true, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.mem[[2]string{user, name}]
	return v, ok, nil
}

// SignIns is signin.SignIns over the gateways. The callback (a redirect from
// the authorization server) carries neither a key nor the server: the
// started sign-in, found by its state, says which server and user it is.
//
// Started sign-ins are kept in pending, which the gateways share: with the
// store's Vault every replica sees them, so the callback may reach any.
type SignIns struct {
	disc    *discovery.Discovery
	pending mcpauth.PendingSignIns
}

var (
	_ signin.SignIns  = (*SignIns)(nil)
	_ web.UserServers = Servers{}
)

// NewSignIns returns the SignIns of d's gateways, whose started sign-ins
// pending keeps.
func NewSignIns(d *discovery.Discovery, pending mcpauth.PendingSignIns) *SignIns {
	return &SignIns{disc: d, pending: pending}
}

func (s *SignIns) gateway(name string) (*mcpgateway.Gateway, error) {
	return Servers{disc: s.disc}.gateway(name)
}

// StartSignIn implements signin.SignIns: the redirect URI ends with the
// server's own name, whatever name st gave it by.
func (s *SignIns) StartSignIn(ctx context.Context, st signin.Start) (string, string, error) {
	g, err := s.gateway(st.Server)
	if err != nil {
		return "", "", err
	}
	cfg := g.Config()
	if cfg.Transport == mcpconfig.TransportStdio {
		return "", "", fmt.Errorf("%w: server %q runs on this machine (stdio) and takes no sign-in; give it its secrets with ${user:NAME}",
			tools.ErrInvalidArguments, cfg.Name)
	}
	redirect := st.CallbackOrigin + mcpauth.CallbackPath(cfg.Name)
	authURL, err := g.StartSignIn(ctx, st.User, redirect, st.Binding)
	if errors.Is(err, mcpauth.ErrTooManySignIns) {
		return "", "", categorized{signin.ErrTooMany, gatewayErr(g, err)}
	}
	if err != nil {
		return "", "", gatewayErr(g, err)
	}
	u, err := url.Parse(authURL)
	state := ""
	if err == nil {
		state = u.Query().Get("state")
	}
	if state == "" {
		return "", "", gatewayErr(g, errors.New("the authorization URL carries no state"))
	}
	return authURL, cfg.Name, nil
}

// FinishSignIn implements signin.SignIns. The sign-in is taken (spent)
// before cb.Check: an answer on the wrong path or from the wrong browser
// voids it.
func (s *SignIns) FinishSignIn(ctx context.Context, cb signin.Callback) (string, string, error) {
	p, err := s.pending.Take(ctx, cb.State)
	if errors.Is(err, mcpauth.ErrUnknownState) {
		return "", "", signin.ErrUnknownState
	}
	if err != nil {
		return "", "", err
	}
	if err := cb.Check(p.Server, p.Binding); err != nil {
		return cb.Server, "", err
	}
	state, code, iss := cb.State, cb.Code, cb.Iss
	g, err := s.gateway(p.Server)
	if err != nil { // removed from mcp.json meanwhile
		return p.Server, p.User, err
	}
	if err := g.FinishPending(ctx, p, state, code, iss); err != nil {
		if errors.Is(err, mcpauth.ErrUnknownState) {
			return p.Server, p.User, signin.ErrUnknownState
		}
		return p.Server, p.User, gatewayErr(g, err)
	}
	return p.Server, p.User, nil
}

// SignOut implements signin.SignIns.
func (s *SignIns) SignOut(ctx context.Context, server, user string) error {
	g, err := s.gateway(server)
	if err != nil {
		return err
	}
	if err := g.SignOut(ctx, user); err != nil {
		return gatewayErr(g, err)
	}
	return nil
}

// OpenVault returns the store's Vault, with the key from
// ELYSIA_SECRET_KEY or the key file beside the SQLite database; a bad or
// wrong key is an error that says which. A PostgreSQL store without
// ELYSIA_SECRET_KEY has no Vault: the error matches store.ErrNoSecretKey,
// and the caller keeps sign-ins and secrets in memory.
func OpenVault(ctx context.Context, s *store.Store, lookupEnv func(string) (string, bool)) (*store.Vault, error) {
	text, _ := lookupEnv("ELYSIA_SECRET_KEY")
	key, err := s.SecretKey(text)
	if err != nil {
		return nil, err
	}
	v, err := store.OpenVault(ctx, s, key)
	if err != nil {
		return nil, err
	}
	return v, nil
}

// GatewaySecrets is the gateways' view of users' secrets, for ${user:NAME}
// in mcp.json: the same sealed values web sets and deletes.
type GatewaySecrets struct{ Secrets *UserSecrets }

var _ mcpgateway.UserSecrets = GatewaySecrets{}

// Secret returns user's secret name, or mcpgateway.ErrNoSecret.
func (g GatewaySecrets) Secret(ctx context.Context, user, name string) (string, error) {
	v, ok, err := g.Secrets.Secret(ctx, user, name)
	switch {
	case err != nil:
		return "", err
	case !ok:
		return "", mcpgateway.ErrNoSecret
	}
	return v, nil
}
