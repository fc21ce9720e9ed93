package mcpendpoint

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/elysia-go/elysia/mcpendpoint/internal/catalog"
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

// Collision is a tool the endpoint listed under another name than its
// natural one, because an earlier tool took that name.
type Collision = catalog.Collision

// buildCatalog lists every enabled server for ctx's user, at most 8 at a
// time, each bounded by the list timeout, and builds the catalog of their
// tools (catalog.Build); a server that fails is left out with a log line
// and never fails the whole.
func (e *Endpoint) buildCatalog(ctx context.Context, gen uint64, ups []Upstream, ex mcpconfig.Expose) *catalog.Catalog {
	lists := make([]catalog.Listing, len(ups))
	for i, up := range ups {
		lists[i].Up = up
	}
	e.eachServer(ctx, len(ups), func(lctx context.Context, i int) {
		up := ups[i]
		if !up.Config().Enabled {
			return
		}
		infos, stale, err := catalog.ListAll(lctx, up)
		switch {
		case err != nil && !isSignIn(err): // a sign-in is listed as its stand-in
			e.logger.Warn("aggregate endpoint: server's tools left out of the list", logKeyServer, up.Config().Name,
				logKeyUser, mcpgateway.UserFrom(ctx), logKeyErr, err.Error())
		case err == nil && stale:
			e.logger.Info("aggregate endpoint: listing a server's cached tools", logKeyServer, up.Config().Name)
		}
		lists[i].Tools, lists[i].Err = infos, err
	})
	cat, collisions := catalog.Build(gen, ex, lists)
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
func (e *Endpoint) catalogFor(ctx context.Context, user string, fresh bool) *catalog.Catalog {
	e.mu.Lock()
	gen := e.gen
	c := e.cats[user]
	e.mu.Unlock()
	if c != nil && c.Gen() == gen && !fresh && (c.RetryAt().IsZero() || time.Now().Before(c.RetryAt())) {
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

// maxCachedUsers bounds the catalogs kept; past it the cache starts over.
const maxCachedUsers = 1024

// lookup finds an exposed name in user's catalog, listing again once when
// it is not there (a server may have connected since).
func (e *Endpoint) lookup(ctx context.Context, user, name string) (*catalog.Catalog, *catalog.Entry) {
	cat := e.catalogFor(ctx, user, false)
	if en := cat.Lookup(name); en != nil {
		return cat, en
	}
	cat = e.catalogFor(ctx, user, true)
	return cat, cat.Lookup(name)
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
