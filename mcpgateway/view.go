package mcpgateway

import (
	"context"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/elysia-go/elysia/mcpgateway/internal/session"
	"github.com/elysia-go/elysia/mcpgateway/mcpauth"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// view is one session owner of a server and the tools listed on it: the
// shared one of a Gateway, or one user's of a per-user server (the pool in
// userpool.go). The Gateway above it keeps what is the server's whatever
// the user: the circuit, the stats, the draining and the description.
type view struct {
	g    *Gateway
	cfg  mcpconfig.ServerConfig // a user's: with their secrets filled in
	user string                 // "" for the shared view
	// conns are the session owners of the server's copies, in the
	// gateway's copies order: one for a server without copies.
	conns []*session.Conn
	// home is the copy a user's calls start at on a round-robin server
	// (startCopy).
	home   int
	logger *slog.Logger
	masker func(string) string // cfg's secrets
	// wg owns the view's relists (list_changed); close waits for it.
	wg sync.WaitGroup
	// inherited are the URIs user had subscribers of when the view was
	// made, on a view of theirs since closed: its first session subscribes
	// to them again (resubscribe).
	inherited []string

	// mu guards everything below. It is never held across I/O.
	mu sync.Mutex
	// cache is the last listing; nil before the first. It is fresh while
	// it was listed on the conn's current session and no list_changed came
	// after its listing started (changes).
	cache     *toolSet
	changes   uint64      // list_changed notifications seen on the current session
	relisting bool        // relist runs: notified starts no other
	listing   *listFlight // in-flight list
	closed    bool
	// lastEager is when keepSubscribed last connected (see eagerEvery).
	lastEager time.Time
}

// newView returns the view of cfg for user ("" for the shared one) of g,
// logging to logger, which masks what it must; it does no I/O.
func (g *Gateway) newView(cfg mcpconfig.ServerConfig, user string, logger *slog.Logger) *view {
	v := &view{g: g, cfg: cfg, user: user, logger: logger, masker: cfg.Masker(), inherited: g.watches.uris(user)}
	o := g.opts
	co := session.Options{User: user, CloseGrace: o.CloseGrace, CrashLoopDeaths: o.CrashLoopDeaths, CrashLoopWindow: o.CrashLoopWindow,
		CrashBackoff: o.CrashBackoff, HealthInterval: o.HealthInterval, Sampler: o.Sampler, Samples: g.samples, Handshake: g.handshake, Notify: v.notified,
		LookupEnv: o.LookupEnv, Tokens: o.Tokens, Browser: o.Browser, OnProcessStart: o.OnProcessStart,
		OnSessionUp: v.resubscribe, OnSessionDown: v.keepSubscribed}
	if so, ok := o.Observer.(StateObserver); ok {
		co.States = so
	}
	all := cfg.AllCopies()
	v.conns = make([]*session.Conn, len(all))
	for i, c := range all {
		l, cco := logger, co
		if len(all) > 1 {
			l = logger.With("copy", mcpconfig.CopyLabel(i))
		}
		if i > 0 && origin(c.URL) != origin(cfg.URL) {
			cco.Tokens = copyTokens{cco.Tokens, "#" + mcpconfig.CopyLabel(i)}
		}
		v.conns[i] = session.New(c, cco, l, v.masker)
	}
	if cfg.Policy == mcpconfig.PolicyRoundRobin && user != "" {
		v.home = int(g.rr.Add(1) % uint64(len(all)))
	}
	return v
}

// close ends the view's sessions and relists, and waits for them.
func (v *view) close() {
	v.mu.Lock()
	v.closed = true
	v.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range v.conns {
		wg.Go(c.Close)
	}
	wg.Wait()
	v.wg.Wait()
}

// current returns the cached tools and whether they are fresh.
func (v *view) current() (*toolSet, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.cache, v.freshLocked(v.cache)
}

// status is the view's part of a Status: the state of its sessions, its
// last error, back-off, process and tools. It does no I/O.
func (v *view) status() Status {
	cs := v.conns[v.listCopy()].Status()
	st := Status{State: cs.State, Tools: []string{}, LastError: cs.LastErr, PID: cs.PID, ProtocolVersion: cs.ProtocolVersion}
	v.mu.Lock()
	if v.cache != nil {
		st.Tools = append(st.Tools, v.cache.names...)
		st.ToolCount = len(st.Tools)
	}
	v.mu.Unlock()
	if !cs.RetryAt.IsZero() {
		t := cs.RetryAt
		st.RetryAt = &t
	}
	return st
}

// userView is a user's view as the pool holds it: when it was last used
// and, for a server that takes user secrets, the values its config was
// filled in with.
type userView struct {
	v        *view
	lastUsed time.Time
	seq      uint64 // order of last use, for LRU: clocks can tie
	secrets  map[string]string
	// busy counts the calls holding v (acquire); retired is set when the
	// entry left g.users while busy: the last release closes it.
	busy    int
	retired bool
}

// serves reports whether s is the live session of the copy v serves from:
// what it says about its lists is what v's callers see.
func (v *view) serves(s *session.Session) bool {
	return s != nil && s == v.conns[v.listCopy()].Current()
}

// logs returns the server's last log messages on each of v's copies.
func (v *view) logs() []session.LogEntry {
	if len(v.conns) == 1 {
		return v.conns[0].Logs()
	}
	var out []session.LogEntry
	for _, c := range v.conns {
		out = append(out, c.Logs()...)
	}
	slices.SortStableFunc(out, func(a, b session.LogEntry) int { return a.Time.Compare(b.Time) })
	return out
}

// copyTokens keeps the tokens of a copy on another origin than the
// server's own under a key of their own: a token signed in for one origin
// is never sent to another.
type copyTokens struct {
	mcpauth.TokenStore
	suffix string
}

func (t copyTokens) Get(ctx context.Context, key mcpauth.TokenKey) (*mcpauth.Token, error) {
	key.Server += t.suffix
	return t.TokenStore.Get(ctx, key)
}

func (t copyTokens) Put(ctx context.Context, key mcpauth.TokenKey, tok *mcpauth.Token) error {
	key.Server += t.suffix
	return t.TokenStore.Put(ctx, key, tok)
}

func (t copyTokens) Delete(ctx context.Context, key mcpauth.TokenKey) error {
	key.Server += t.suffix
	return t.TokenStore.Delete(ctx, key)
}

// origin is u's scheme and host, lower-cased; "" for a stdio server.
func origin(u string) string {
	p, err := url.Parse(u)
	if err != nil || u == "" {
		return ""
	}
	return strings.ToLower(p.Scheme + "://" + p.Host)
}
