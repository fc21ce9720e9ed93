package mcpauth

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
)

// TokenKey names whose token it is: one MCP server (its name in mcp.json)
// and one user. Alice's token is never looked up under Bob's key.
type TokenKey struct {
	Server string
	User   string
}

// Token is what a sign-in leaves behind for one (server, user): the OAuth
// tokens and what is needed to refresh them. Every field but the times and
// names is a secret: Token never prints its values (String, GoString and
// LogValue redact them), and callers must not log its fields.
type Token struct {
	AccessToken  string    `json:"access_token"`
	TokenType    string    `json:"token_type,omitempty"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	// Scopes are the scopes granted (the token response's scope, else
	// those asked for).
	Scopes []string `json:"scopes,omitempty"`
	// Resource is the canonical URL of the MCP server the token was
	// issued for (RFC 8707). A token is only ever sent to that resource:
	// when mcp.json points the server elsewhere, the token is not used.
	Resource string `json:"resource"`
	// Issuer and TokenURL are the authorization server's, for refreshing.
	Issuer   string `json:"issuer,omitempty"`
	TokenURL string `json:"token_url,omitempty"`
	// ClientID, ClientSecret and AuthMethod are the client identity the
	// token was obtained with (pre-registered, a Client ID Metadata
	// Document URL, or dynamically registered), for refreshing.
	ClientID     string `json:"client_id,omitempty"`
	ClientSecret string `json:"client_secret,omitempty"`
	AuthMethod   string `json:"auth_method,omitempty"`
	// DPoPKey is the private key a DPoP-bound token (TokenType "DPoP") and
	// its refresh token are bound to (RFC 9449), base64url; empty for a
	// Bearer token.
	DPoPKey string `json:"dpop_key,omitempty"`
}

// dpop reports whether t is DPoP-bound: sent as "Authorization: DPoP"
// with a proof.
func (t *Token) dpop() bool { return strings.EqualFold(t.TokenType, "DPoP") }

// String redacts the token: it says only whether there is one.
func (t *Token) String() string {
	if t == nil || t.AccessToken == "" {
		return "Token(none)"
	}
	return "Token(***)"
}

// GoString redacts the token like String, so %#v prints no secret.
func (t *Token) GoString() string { return t.String() }

// LogValue implements slog.LogValuer: the resource, scopes and expiry,
// never a secret.
func (t *Token) LogValue() slog.Value {
	if t == nil {
		return slog.StringValue("none")
	}
	return slog.GroupValue(slog.String("resource", t.Resource), slog.Any("scopes", t.Scopes),
		slog.Time("expiry", t.Expiry), slog.Bool("refreshable", t.RefreshToken != ""), slog.Bool("dpop", t.dpop()))
}

// clone returns a deep copy, so that a stored token is never shared.
func (t *Token) clone() *Token {
	if t == nil {
		return nil
	}
	c := *t
	c.Scopes = slices.Clone(t.Scopes)
	return &c
}

// TokenStore keeps tokens per (server, user). The service backs it with its
// encrypted store (shared by every replica); the CLI with a file; tests with
// a MemoryTokenStore.
//
// Implementations must be safe for concurrent use. Get returns ErrNoToken
// (errors.Is) when there is none, and a token the caller may keep (not
// shared with the store). Put replaces the token of key as a whole, and
// Delete of a missing key is not an error. Errors must not carry token
// values.
type TokenStore interface {
	Get(ctx context.Context, key TokenKey) (*Token, error)
	Put(ctx context.Context, key TokenKey, tok *Token) error
	Delete(ctx context.Context, key TokenKey) error
}

// MemoryTokenStore is a TokenStore in memory, for the CLI and tests. The
// zero value is ready to use; it is safe for concurrent use.
type MemoryTokenStore struct {
	// mu guards tokens.
	mu     sync.Mutex
	tokens map[TokenKey]*Token
}

var _ TokenStore = (*MemoryTokenStore)(nil)

// Get returns a copy of key's token, or ErrNoToken.
func (m *MemoryTokenStore) Get(_ context.Context, key TokenKey) (*Token, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tokens[key]
	if !ok {
		return nil, ErrNoToken
	}
	return t.clone(), nil
}

// Put stores a copy of tok under key.
func (m *MemoryTokenStore) Put(_ context.Context, key TokenKey, tok *Token) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.tokens == nil {
		m.tokens = make(map[TokenKey]*Token)
	}
	m.tokens[key] = tok.clone()
	return nil
}

// Delete forgets key's token.
func (m *MemoryTokenStore) Delete(_ context.Context, key TokenKey) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.tokens, key)
	return nil
}
