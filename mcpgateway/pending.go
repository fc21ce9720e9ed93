package mcpgateway

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// PendingSignIn is a web sign-in between its start and its callback: what
// the callback's answer is checked against and what its code is exchanged
// with. Verifier and ClientSecret are secrets: PendingSignIn never prints
// its values, and a PendingSignIns that stores it outside memory must seal
// it.
type PendingSignIn struct {
	Server string `json:"server"`
	User   string `json:"user"`
	// Verifier is the PKCE code verifier.
	Verifier string `json:"verifier"`
	// ClientID, ClientSecret and AuthMethod are the client identity the
	// sign-in started with.
	ClientID     string   `json:"client_id"`
	ClientSecret string   `json:"client_secret,omitempty"`
	AuthMethod   string   `json:"auth_method"`
	Scopes       []string `json:"scopes,omitempty"`
	RedirectURI  string   `json:"redirect_uri"`
	// Resource is the MCP server's canonical URL (RFC 8707).
	Resource string `json:"resource"`
	// Issuer, AuthURL and TokenURL are the authorization server's;
	// IssParameter says it sends iss with its answers (RFC 9207).
	Issuer       string `json:"issuer"`
	AuthURL      string `json:"auth_url"`
	TokenURL     string `json:"token_url"`
	IssParameter bool   `json:"iss_parameter,omitempty"`
}

// String redacts the sign-in: it names the server and user only.
func (p *PendingSignIn) String() string {
	if p == nil {
		return "PendingSignIn(none)"
	}
	return fmt.Sprintf("PendingSignIn(%s for %s)", p.Server, p.User)
}

// GoString redacts like String, so %#v prints no secret.
func (p *PendingSignIn) GoString() string { return p.String() }

// LogValue implements slog.LogValuer without a secret.
func (p *PendingSignIn) LogValue() slog.Value { return slog.StringValue(p.String()) }

// PendingSignIns keeps web sign-ins from StartSignIn to their callback, by
// state. The service backs it with its encrypted store, so that the
// callback may reach any replica; the default keeps them in memory.
// Implementations must be safe for concurrent use, and Take must hand a
// sign-in out once: a second Take of the same state, or a Take after
// expires, returns an error matching ErrUnknownState. Errors must not
// carry the sign-in's secrets.
type PendingSignIns interface {
	Put(ctx context.Context, state string, p *PendingSignIn, expires time.Time) error
	Take(ctx context.Context, state string) (*PendingSignIn, error)
}

// MemoryPendingSignIns is a PendingSignIns in memory. The zero value is
// ready to use; expired sign-ins are dropped on each Put.
type MemoryPendingSignIns struct {
	// mu guards m.
	mu sync.Mutex
	m  map[string]memoryPending
}

type memoryPending struct {
	p       PendingSignIn
	expires time.Time
}

// Put implements PendingSignIns.
func (s *MemoryPendingSignIns) Put(_ context.Context, state string, p *PendingSignIn, expires time.Time) error {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]memoryPending{}
	}
	for st, mp := range s.m {
		if now.After(mp.expires) {
			delete(s.m, st)
		}
	}
	s.m[state] = memoryPending{p: *p, expires: expires}
	return nil
}

// Take implements PendingSignIns.
func (s *MemoryPendingSignIns) Take(_ context.Context, state string) (*PendingSignIn, error) {
	s.mu.Lock()
	mp, ok := s.m[state]
	delete(s.m, state) // one use, whatever comes of it
	s.mu.Unlock()
	if !ok || time.Now().After(mp.expires) {
		return nil, ErrUnknownState
	}
	return &mp.p, nil
}

// pendingOf is what StartSignIn keeps of p, a sign-in user began on g.
func (g *Gateway) pendingOf(user string, p *pendingAuth) *PendingSignIn {
	as := p.target.as
	return &PendingSignIn{
		Server: g.cfg.Name, User: user, Verifier: p.verifier,
		ClientID: p.clientID, ClientSecret: p.secret, AuthMethod: p.method, Scopes: p.scopes,
		RedirectURI: p.cfg.RedirectURL, Resource: p.target.resource,
		Issuer: as.Issuer, AuthURL: as.AuthorizationEndpoint, TokenURL: as.TokenEndpoint,
		IssParameter: as.AuthorizationResponseIssParameter,
	}
}

// resume rebuilds the pendingAuth of a sign-in kept as p, with state.
func (a *authorizer) resume(p *PendingSignIn, state string) *pendingAuth {
	as := &authServerMeta{Issuer: p.Issuer, AuthorizationEndpoint: p.AuthURL, TokenEndpoint: p.TokenURL,
		AuthorizationResponseIssParameter: p.IssParameter}
	return &pendingAuth{
		state: state, verifier: p.Verifier,
		cfg:      a.oauth2Config(p.ClientID, p.ClientSecret, p.AuthMethod, p.TokenURL, p.AuthURL, p.RedirectURI, p.Scopes),
		target:   &authTarget{resource: p.Resource, as: as},
		scopes:   p.Scopes,
		clientID: p.ClientID, secret: p.ClientSecret, method: p.AuthMethod,
	}
}
