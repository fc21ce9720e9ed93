package mcpendpoint

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/mcpendpoint/internal/names"
	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/mcpgateway/mcpauth"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
	"github.com/elysia-go/elysia/tools"
)

// MaxNameLen is the longest tool name the endpoint lists: Claude Desktop,
// VS Code and OpenAI refuse longer ones.
const MaxNameLen = names.MaxLen

// Upstream is one configured server as the endpoint uses it;
// *mcpgateway.Gateway satisfies it. Its methods are safe for concurrent use
// and take the asking user from ctx (mcpgateway.WithUser).
type Upstream interface {
	// Config returns the server's configuration (its name and prefix).
	Config() mcpconfig.ServerConfig
	// ListTools returns one page of the server's tools, the last listing
	// (Stale) while the server cannot be used.
	ListTools(ctx context.Context, q mcpgateway.ListQuery) (mcpgateway.ListPage, error)
	// ExecuteWith calls one tool, validating inputs against its schema
	// first; emit receives the server's progress.
	ExecuteWith(ctx context.Context, tool string, inputs map[string]any, emit tools.Emitter) (*mcpgateway.CallResult, error)
	// Status is a snapshot without I/O; the endpoint reads its tool names
	// to see when the lists change.
	Status() mcpgateway.Status
}

// Source gives the endpoint the servers of the config in use. Its methods
// are safe for concurrent use.
type Source interface {
	// Upstreams returns the current servers in file order.
	Upstreams() []Upstream
	// Expose returns the config's "expose" block.
	Expose() mcpconfig.Expose
	// Notify makes the source send to c, without blocking, whenever
	// Upstreams, Expose or a server's tools may have changed; Stop undoes
	// it.
	Notify(c chan<- struct{})
	Stop(c chan<- struct{})
}

// CatalogNotifier is an optional interface of a Source: one that
// implements it sends to the channels given to NotifyCatalog only when
// what the lists are made of may have changed (a reload, a server's tools,
// resources or prompts, a change of a server's state), not after every
// call as Notify does; Stop undoes it too. Run follows it when the Source
// has it, so that a call does not cost a fingerprint of every server.
type CatalogNotifier interface {
	NotifyCatalog(c chan<- struct{})
}

// maxListPages bounds the pages read from one server for one listing.
const maxListPages = 1000

// entry is one listed tool of the catalog.
type entry struct {
	name   string // as the client sees it
	up     Upstream
	server string
	tool   string // the server's own name for it
	info   mcpgateway.ToolInfo
	// signIn marks the stand-in of a server the user must sign in to
	// first: calling it answers with the sign-in link.
	signIn error
}

// catalog is every tool one user can reach, named for the client. It is
// immutable once built.
type catalog struct {
	gen uint64
	// retryAt, when set, is when a catalog that left a server out (down,
	// slow, signed out) is built again, so a server that comes back or a
	// sign-in shows without waiting for another change.
	retryAt time.Time
	entries []entry
	byName  map[string]int
	byTool  map[[2]string]string // (server, tool) → exposed name
	// listed is entries as tools/list gives them, built once on first use.
	listed func() []mcp.Tool
	// pages are the fast path's pages (page), by where they start, each
	// built once; pagesMu guards them.
	pagesMu sync.Mutex
	pages   map[pageKey][]byte
}

// Collision is a tool the endpoint listed under another name than its
// natural one, because an earlier tool took that name.
type Collision struct {
	Server string `json:"server"`
	Tool   string `json:"tool"`
	Wanted string `json:"wanted"`
	Name   string `json:"name"`
}

// listAll reads every page of up's tools. A server that cannot be used
// answers with its last listing; one that never listed is an error.
func listAll(ctx context.Context, up Upstream) ([]mcpgateway.ToolInfo, bool, error) {
	var out []mcpgateway.ToolInfo
	q := mcpgateway.ListQuery{}
	stale := false
	for range maxListPages {
		p, err := up.ListTools(ctx, q)
		if err != nil {
			return nil, false, err
		}
		stale = stale || p.Stale
		out = append(out, p.Tools...)
		if p.NextCursor == "" {
			return out, stale, nil
		}
		q.Cursor = p.NextCursor
	}
	return out, stale, fmt.Errorf("server %q: more than %d pages of tools", up.Config().Name, maxListPages)
}

// buildCatalog lists every enabled server for ctx's user, at most 8 at a
// time, each bounded by the list timeout; a server that fails is left out
// with a log line and never fails the whole.
func (e *Endpoint) buildCatalog(ctx context.Context, gen uint64, ups []Upstream, ex mcpconfig.Expose) *catalog {
	lists := make([][]mcpgateway.ToolInfo, len(ups))
	failed := make([]bool, len(ups))
	signIn := make([]error, len(ups))
	e.eachServer(ctx, len(ups), func(lctx context.Context, i int) {
		up := ups[i]
		if !up.Config().Enabled {
			return
		}
		infos, stale, err := listAll(lctx, up)
		switch {
		case err != nil && isSignIn(err):
			failed[i], signIn[i] = true, err
		case err != nil:
			failed[i] = true
			e.logger.Warn("aggregate endpoint: server's tools left out of the list", logKeyServer, up.Config().Name,
				logKeyUser, mcpgateway.UserFrom(ctx), logKeyErr, err.Error())
		case stale:
			e.logger.Info("aggregate endpoint: listing a server's cached tools", logKeyServer, up.Config().Name)
		}
		lists[i] = infos
	})

	cat := &catalog{gen: gen, byName: map[string]int{}, byTool: map[[2]string]string{}}
	if slices.Contains(failed, true) {
		cat.retryAt = time.Now().Add(incompleteTTL)
	}
	taken := map[string]bool{}
	if ex.Agent {
		taken[askTool] = true
	}
	var collisions []Collision
	for i, up := range ups {
		cfg := up.Config()
		if signIn[i] != nil {
			name, _ := names.Dedupe(names.Exposed(cfg.ExposedPrefix(), ex.Separator, signInTool), taken)
			cat.byName[name] = len(cat.entries)
			cat.entries = append(cat.entries, entry{name: name, up: up, server: cfg.Name, signIn: signIn[i], info: mcpgateway.ToolInfo{
				Name:        signInTool,
				Description: fmt.Sprintf("You must sign in to server %q before its tools are listed: call this for the sign-in link.", cfg.Name),
				InputSchema: json.RawMessage(`{"type":"object"}`),
			}})
			continue
		}
		for _, ti := range lists[i] {
			want := names.Exposed(cfg.ExposedPrefix(), ex.Separator, ti.Name)
			name, moved := names.Dedupe(want, taken)
			if moved {
				collisions = append(collisions, Collision{Server: cfg.Name, Tool: ti.Name, Wanted: want, Name: name})
			}
			cat.byName[name] = len(cat.entries)
			cat.byTool[[2]string{cfg.Name, ti.Name}] = name
			cat.entries = append(cat.entries, entry{name: name, up: up, server: cfg.Name, tool: ti.Name, info: ti})
		}
	}
	cat.listed = sync.OnceValue(func() []mcp.Tool {
		out := make([]mcp.Tool, len(cat.entries))
		for i := range cat.entries {
			out[i] = toolOf(&cat.entries[i])
		}
		return out
	})
	for _, c := range collisions {
		e.logger.Warn("aggregate endpoint: tool name taken, listed under another", logKeyServer, c.Server, "tool", c.Tool,
			logKeyWanted, c.Wanted, logKeyName, c.Name)
	}
	e.mu.Lock()
	e.collisions = collisions
	e.mu.Unlock()
	return cat
}

// catalogFor returns user's catalog, from the cache while nothing changed.
func (e *Endpoint) catalogFor(ctx context.Context, user string, fresh bool) *catalog {
	e.mu.Lock()
	gen := e.gen
	c := e.cats[user]
	e.mu.Unlock()
	if c != nil && c.gen == gen && !fresh && (c.retryAt.IsZero() || time.Now().Before(c.retryAt)) {
		return c
	}
	c = e.buildCatalog(mcpgateway.WithUser(ctx, user), gen, e.src.Upstreams(), e.expose())
	if ctx.Err() != nil {
		return c // the client gave up: what was listed is not the servers' fault
	}
	e.mu.Lock()
	if e.gen == gen {
		if len(e.cats) >= maxCachedUsers {
			clear(e.cats)
		}
		e.cats[user] = c
	}
	e.mu.Unlock()
	return c
}

// incompleteTTL is how long a catalog that left a server out is kept.
const incompleteTTL = 2 * time.Second

// maxCachedUsers bounds the catalogs kept; past it the cache starts over.
const maxCachedUsers = 1024

// lookup finds an exposed name in user's catalog, listing again once when
// it is not there (a server may have connected since).
func (e *Endpoint) lookup(ctx context.Context, user, name string) (*catalog, *entry) {
	cat := e.catalogFor(ctx, user, false)
	if i, ok := cat.byName[name]; ok {
		return cat, &cat.entries[i]
	}
	cat = e.catalogFor(ctx, user, true)
	if i, ok := cat.byName[name]; ok {
		return cat, &cat.entries[i]
	}
	return cat, nil
}

// expose returns the source's expose block with defaults for zero fields.
func (e *Endpoint) expose() mcpconfig.Expose {
	ex := e.src.Expose()
	d := mcpconfig.DefaultExpose()
	if ex.Mode == "" {
		ex.Mode = d.Mode
	}
	if ex.MaxTools <= 0 {
		ex.MaxTools = d.MaxTools
	}
	if ex.Separator == "" {
		ex.Separator = d.Separator
	}
	return ex
}

// fingerprint sums what the lists are made of and no I/O can tell: the
// expose block, each server's name, prefix, state of being enabled and last
// listed tool names.
func (e *Endpoint) fingerprint() [32]byte {
	h := sha256.New()
	b, _ := json.Marshal(e.expose()) // plain fields: cannot fail
	h.Write(b)
	for _, up := range e.src.Upstreams() {
		cfg := up.Config()
		st := up.Status()
		_, _ = fmt.Fprintf(h, "\x00%q %q %t %d", cfg.Name, cfg.ExposedPrefix(), cfg.Enabled, len(st.Tools))
		for _, t := range st.Tools {
			_, _ = fmt.Fprintf(h, "\x01%s", t) // a hash never fails a write
		}
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

// isSignIn reports whether err says the user must sign in (OAuth).
func isSignIn(err error) bool { return errors.Is(err, mcpauth.ErrSignInRequired) }
