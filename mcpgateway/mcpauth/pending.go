package mcpauth

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
	// DPoP says the code is exchanged for a DPoP-bound token (RFC 9449),
	// and DPoPRequired that the server takes no other.
	DPoP         bool `json:"dpop,omitempty"`
	DPoPRequired bool `json:"dpop_required,omitempty"`
	// Binding is the SHA-256 (hex) of a random secret that only the
	// browser which started the sign-in holds (in a cookie): the callback
	// must bring the secret. Never derived from the state, which the
	// authorization URL carries to every party of the sign-in.
	Binding string `json:"binding,omitempty"`
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

// MaxPendingSignInsPerUser bounds the web sign-ins one user may have
// waiting for their callback at once, and MaxPendingSignIns those of all
// users: each start registers a client and keeps a row, so a page that
// starts sign-ins in a loop must not grow either without bound.
const (
	MaxPendingSignInsPerUser = 10
	MaxPendingSignIns        = 1000
)

// PendingSignIns keeps web sign-ins from StartSignIn to their callback, by
// state. The service backs it with its encrypted store, so that the
// callback may reach any replica; the default keeps them in memory.
// Implementations must be safe for concurrent use, and Take must hand a
// sign-in out once: a second Take of the same state, or a Take after
// expires, returns an error matching ErrUnknownState. Put drops the
// expired sign-ins first and then refuses, with an error matching
// ErrTooManySignIns, a sign-in beyond MaxPendingSignInsPerUser for its
// user or MaxPendingSignIns in all. Errors must not carry the sign-in's
// secrets.
type PendingSignIns interface {
	Put(ctx context.Context, state string, p *PendingSignIn, expires time.Time) error
	// Room returns an error matching ErrTooManySignIns when a Put for
	// user would be refused now, so that a start refuses before it costs
	// the MCP and authorization servers anything.
	Room(ctx context.Context, user string) error
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
	if err := s.roomLocked(now, p.User); err != nil {
		return err
	}
	s.m[state] = memoryPending{p: *p, expires: expires}
	return nil
}

// Room implements PendingSignIns.
func (s *MemoryPendingSignIns) Room(_ context.Context, user string) error {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.roomLocked(now, user)
}

// roomLocked drops the sign-ins expired at now and says whether user may
// start one more. s.mu must be held.
func (s *MemoryPendingSignIns) roomLocked(now time.Time, user string) error {
	mine := 0
	for st, mp := range s.m {
		switch {
		case now.After(mp.expires):
			delete(s.m, st)
		case mp.p.User == user:
			mine++
		}
	}
	return pendingCapErr(user, mine, len(s.m))
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

// ExpireOne makes one of user's waiting sign-ins expired, as if its ten
// minutes had passed; it reports whether user had one. Tests use it to
// see a cap make room without waiting.
func (s *MemoryPendingSignIns) ExpireOne(user string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for st, mp := range s.m {
		if mp.p.User == user {
			mp.expires = time.Now().Add(-time.Second)
			s.m[st] = mp
			return true
		}
	}
	return false
}

// pendingCapErr is the error of a Put for user when user already has mine
// sign-ins waiting and all users total: nil under both caps.
func pendingCapErr(user string, mine, total int) error {
	switch {
	case mine >= MaxPendingSignInsPerUser:
		return fmt.Errorf("user %q has %d sign-ins waiting for their callback, the most allowed; finish one or wait ten minutes: %w",
			user, mine, ErrTooManySignIns)
	case total >= MaxPendingSignIns:
		return fmt.Errorf("%d sign-ins are waiting for their callback, the most this service keeps; try again in a few minutes: %w",
			total, ErrTooManySignIns)
	}
	return nil
}

// PendingOf is what a web sign-in keeps of p, a sign-in user began on the
// server named server, with binding (PendingSignIn.Binding).
func PendingOf(server, user, binding string, p *PendingAuth) *PendingSignIn {
	as := p.target.as
	return &PendingSignIn{
		Server: server, User: user, Verifier: p.verifier,
		ClientID: p.clientID, ClientSecret: p.secret, AuthMethod: p.method, Scopes: p.scopes,
		RedirectURI: p.cfg.RedirectURL, Resource: p.target.resource,
		Issuer: as.Issuer, AuthURL: as.AuthorizationEndpoint, TokenURL: as.TokenEndpoint,
		IssParameter: as.AuthorizationResponseIssParameter, Binding: binding,
		DPoP: p.target.dpop, DPoPRequired: p.target.dpopRequired,
	}
}

// Resume rebuilds the PendingAuth of a sign-in kept as p, with state.
func (a *Authorizer) Resume(p *PendingSignIn, state string) *PendingAuth {
	as := &authServerMeta{Issuer: p.Issuer, AuthorizationEndpoint: p.AuthURL, TokenEndpoint: p.TokenURL,
		AuthorizationResponseIssParameter: p.IssParameter}
	return &PendingAuth{
		state: state, verifier: p.Verifier,
		cfg:      a.oauth2Config(p.ClientID, p.ClientSecret, p.AuthMethod, p.TokenURL, p.AuthURL, p.RedirectURI, p.Scopes),
		target:   &authTarget{resource: p.Resource, as: as, dpop: p.DPoP, dpopRequired: p.DPoPRequired},
		scopes:   p.Scopes,
		clientID: p.ClientID, secret: p.ClientSecret, method: p.AuthMethod,
	}
}
