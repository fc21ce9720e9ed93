// Package catalog is the catalogue of the tools the MCP endpoint lists to
// one user: built from its servers' tool lists, each tool named for the
// client (a server's prefix and the tool's own name, made unique), looked
// up by that name, and encoded once, a page at a time, as tools/list gives
// it; and the other parts of a tools/list result (the search, ask and
// gateway tools).
package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/mcpendpoint/internal/names"
	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/mcpgateway/mcpauth"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// Upstream is one configured server as a catalogue is built from it. Its
// methods are safe for concurrent use and take the asking user from ctx
// (mcpgateway.WithUser).
type Upstream interface {
	// Config returns the server's configuration (its name and prefix).
	Config() mcpconfig.ServerConfig
	// ListTools returns one page of the server's tools, the last listing
	// (Stale) while the server cannot be used.
	ListTools(ctx context.Context, q mcpgateway.ListQuery) (mcpgateway.ListPage, error)
}

// maxListPages bounds the pages read from one server for one listing.
const maxListPages = 1000

// IncompleteTTL is how long a catalogue that left a server out is kept
// before it is built again (RetryAt).
const IncompleteTTL = 2 * time.Second

// Entry is one listed tool of a catalogue. It is the catalogue's: its
// fields are read, never changed.
type Entry struct {
	Name   string // as the client sees it
	Up     Upstream
	Server string
	Tool   string // the server's own name for it
	Info   mcpgateway.ToolInfo
	// SignIn marks the stand-in of a server the user must sign in to
	// first: calling it answers with the sign-in link.
	SignIn error
}

// Catalog is every tool one user can reach, named for the client. It is
// immutable once built, and safe for concurrent use.
type Catalog struct {
	gen uint64
	// retryAt, when set, is when a catalog that left a server out (down,
	// slow, signed out) is built again, so a server that comes back or a
	// sign-in shows without waiting for another change.
	retryAt time.Time
	entries []Entry
	byName  map[string]int
	byTool  map[[2]string]string // (server, tool) → exposed name
	// listed is entries as tools/list gives them, built once on first use.
	listed func() []mcp.Tool
	// pages are the encoded pages (page), by where they start, each built
	// once; pagesMu guards them.
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

// ListAll reads every page of up's tools, and reports whether any page
// came from the server's last listing (Stale). A server that cannot be used
// answers with its last listing; one that never listed is an error.
func ListAll(ctx context.Context, up Upstream) ([]mcpgateway.ToolInfo, bool, error) {
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

// Listing is one server's part of a catalogue: the server, and what
// ListAll read of it (nothing for a server that was not asked).
type Listing struct {
	Up    Upstream
	Tools []mcpgateway.ToolInfo
	// Err, when set, is why the server's tools are not all there; one
	// saying the user must sign in (mcpauth.ErrSignInRequired) lists the
	// server's sign-in stand-in in place of its tools.
	Err error
}

// Build makes the catalogue of the tools of lists, in order, each named
// <prefix><separator><tool> as ex says (names.Exposed): a name already
// taken goes to the later tool with a suffix (names.Dedupe), and each such
// move is returned as a Collision. When ex lists the ask tool, its name is
// taken first. gen is the generation of the cache it is built for (Gen).
// A catalogue with a listing that failed is to be built again after
// IncompleteTTL (RetryAt).
func Build(gen uint64, ex mcpconfig.Expose, lists []Listing) (*Catalog, []Collision) {
	c := &Catalog{gen: gen, byName: map[string]int{}, byTool: map[[2]string]string{}}
	for _, l := range lists {
		if l.Err != nil {
			c.retryAt = time.Now().Add(IncompleteTTL)
			break
		}
	}
	taken := map[string]bool{}
	if ex.Agent {
		taken[AskName] = true
	}
	var collisions []Collision
	for _, l := range lists {
		cfg := l.Up.Config()
		if errors.Is(l.Err, mcpauth.ErrSignInRequired) {
			name, _ := names.Dedupe(names.Exposed(cfg.ExposedPrefix(), ex.Separator, SignInName), taken)
			c.byName[name] = len(c.entries)
			c.entries = append(c.entries, Entry{Name: name, Up: l.Up, Server: cfg.Name, SignIn: l.Err, Info: mcpgateway.ToolInfo{
				Name:        SignInName,
				Description: fmt.Sprintf("You must sign in to server %q before its tools are listed: call this for the sign-in link.", cfg.Name),
				InputSchema: json.RawMessage(`{"type":"object"}`),
			}})
			continue
		}
		for _, ti := range l.Tools {
			want := names.Exposed(cfg.ExposedPrefix(), ex.Separator, ti.Name)
			name, moved := names.Dedupe(want, taken)
			if moved {
				collisions = append(collisions, Collision{Server: cfg.Name, Tool: ti.Name, Wanted: want, Name: name})
			}
			c.byName[name] = len(c.entries)
			c.byTool[[2]string{cfg.Name, ti.Name}] = name
			c.entries = append(c.entries, Entry{Name: name, Up: l.Up, Server: cfg.Name, Tool: ti.Name, Info: ti})
		}
	}
	c.listed = sync.OnceValue(func() []mcp.Tool {
		out := make([]mcp.Tool, len(c.entries))
		for i := range c.entries {
			out[i] = toolOf(&c.entries[i])
		}
		return out
	})
	return c, collisions
}

// Gen is the generation of the cache c was built for.
func (c *Catalog) Gen() uint64 { return c.gen }

// RetryAt is when c, which left a server out (down, slow, signed out), is
// to be built again, so that a server that comes back or a sign-in shows
// without waiting for another change; zero when nothing was left out.
func (c *Catalog) RetryAt() time.Time { return c.retryAt }

// Len is the number of tools listed in c.
func (c *Catalog) Len() int { return len(c.entries) }

// Lookup returns the tool listed as name, or nil.
func (c *Catalog) Lookup(name string) *Entry {
	if i, ok := c.byName[name]; ok {
		return &c.entries[i]
	}
	return nil
}

// Name returns the name server's tool is listed under, and whether it is
// listed.
func (c *Catalog) Name(server, tool string) (string, bool) {
	name, ok := c.byTool[[2]string{server, tool}]
	return name, ok
}

// Names returns the listed names, in order.
func (c *Catalog) Names() []string {
	out := make([]string, 0, len(c.entries))
	for _, en := range c.entries {
		out = append(out, en.Name)
	}
	return out
}

// Listed returns c's tools as tools/list gives them, in order; the slice
// is built once and shared: it must not be changed.
func (c *Catalog) Listed() []mcp.Tool { return c.listed() }
