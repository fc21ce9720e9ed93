package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/elysia-go/elysia/mcpendpoint/internal/names"
	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/mcpgateway/mcpauth"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// server is an Upstream that lists pages of tools, the cursor of each
// page being its index.
type server struct {
	cfg   mcpconfig.ServerConfig
	pages []mcpgateway.ListPage
	err   error
	// endless makes every page name a next one.
	endless bool
	asked   int
}

func (s *server) Config() mcpconfig.ServerConfig { return s.cfg }

func (s *server) ListTools(_ context.Context, q mcpgateway.ListQuery) (mcpgateway.ListPage, error) {
	s.asked++
	if s.err != nil {
		return mcpgateway.ListPage{}, s.err
	}
	if s.endless {
		return mcpgateway.ListPage{Tools: []mcpgateway.ToolInfo{{Name: "t" + q.Cursor}}, NextCursor: q.Cursor + "x"}, nil
	}
	i := 0
	if q.Cursor != "" {
		i, _ = strconv.Atoi(q.Cursor)
	}
	return s.pages[i], nil
}

// listing returns a server named name listing tools on one page.
func listing(name string, tools ...string) *server {
	var p mcpgateway.ListPage
	for _, t := range tools {
		p.Tools = append(p.Tools, mcpgateway.ToolInfo{Name: t, InputSchema: json.RawMessage(`{"type":"object"}`)})
	}
	return &server{cfg: mcpconfig.ServerConfig{Name: name, Enabled: true}, pages: []mcpgateway.ListPage{p}}
}

func TestListAll(t *testing.T) {
	s := &server{cfg: mcpconfig.ServerConfig{Name: "s"}, pages: []mcpgateway.ListPage{
		{Tools: []mcpgateway.ToolInfo{{Name: "a"}, {Name: "b"}}, NextCursor: "1"},
		{Tools: []mcpgateway.ToolInfo{{Name: "c"}}, NextCursor: "2", Stale: true},
		{Tools: []mcpgateway.ToolInfo{{Name: "d"}}},
	}}
	infos, stale, err := ListAll(t.Context(), s)
	var got []string
	for _, ti := range infos {
		got = append(got, ti.Name)
	}
	if err != nil || !stale || strings.Join(got, ",") != "a,b,c,d" {
		t.Errorf("ListAll = %v, stale %t, %v; want a,b,c,d, stale, no error", got, stale, err)
	}

	down := errors.New("down")
	if infos, _, err := ListAll(t.Context(), &server{err: down}); !errors.Is(err, down) || infos != nil {
		t.Errorf("ListAll of a server that fails = %v, %v; want nothing and its error", infos, err)
	}

	endless := &server{cfg: mcpconfig.ServerConfig{Name: "loop"}, endless: true}
	infos, _, err = ListAll(t.Context(), endless)
	if err == nil || !strings.Contains(err.Error(), `"loop"`) || endless.asked != maxListPages || len(infos) != maxListPages {
		t.Errorf("ListAll of a server whose pages never end: %d tools, asked %d times, %v; want %d, an error",
			len(infos), endless.asked, err, maxListPages)
	}
}

// TestBuild: the tools are named <prefix><separator><tool> in the order
// of the listings; a taken name moves to the later tool and is told as a
// Collision; ask's name is taken first when the agent is listed; a server
// needing a sign-in is listed as its sign_in stand-in, and a catalogue
// that left a server out is built again soon.
func TestBuild(t *testing.T) {
	empty := ""
	bare := listing("bare", "a_x", "ask")
	bare.cfg.Prefix = &empty
	a := listing("a", "x", "ask", "y")
	b := listing("b", "y")
	bPrefixA := listing("b2", "x")
	pa := "a"
	bPrefixA.cfg.Prefix = &pa
	locked := &server{cfg: mcpconfig.ServerConfig{Name: "locked", Enabled: true}}
	signIn := fmt.Errorf("locked: %w", mcpauth.ErrSignInRequired)
	ex := mcpconfig.Expose{Mode: mcpconfig.ExposeAuto, MaxTools: 10, Separator: "_", Agent: true}

	c, collisions := Build(7, ex, []Listing{
		{Up: a, Tools: a.pages[0].Tools},
		{Up: bare, Tools: bare.pages[0].Tools},
		{Up: b, Tools: b.pages[0].Tools},
		{Up: bPrefixA, Tools: bPrefixA.pages[0].Tools},
		{Up: locked, Err: signIn},
	})
	want := []string{"a_x", "a_ask", "a_y", "a_x_2", "ask_2", "b_y", "a_x_3", "locked_sign_in"}
	if got := c.Names(); !slices.Equal(got, want) || c.Len() != len(want) {
		t.Errorf("names %v, want %v", got, want)
	}
	wantColl := []Collision{
		{Server: "bare", Tool: "a_x", Wanted: "a_x", Name: "a_x_2"},
		{Server: "bare", Tool: "ask", Wanted: "ask", Name: "ask_2"},
		{Server: "b2", Tool: "x", Wanted: "a_x", Name: "a_x_3"},
	}
	if !slices.Equal(collisions, wantColl) {
		t.Errorf("collisions %v, want %v", collisions, wantColl)
	}
	if c.Gen() != 7 {
		t.Errorf("Gen = %d, want 7", c.Gen())
	}
	if until := time.Until(c.RetryAt()); until <= 0 || until > IncompleteTTL {
		t.Errorf("a catalogue without a server is built again in %v, want within %v", until, IncompleteTTL)
	}

	en := c.Lookup("a_x_3")
	if en == nil || en.Up != bPrefixA || en.Server != "b2" || en.Tool != "x" || en.Info.Name != "x" || en.SignIn != nil {
		t.Errorf("Lookup(a_x_3) = %+v, want b2's x", en)
	}
	if en := c.Lookup("locked_sign_in"); en == nil || !errors.Is(en.SignIn, mcpauth.ErrSignInRequired) || en.Server != "locked" || en.Tool != "" ||
		!strings.Contains(en.Info.Description, `"locked"`) || string(en.Info.InputSchema) != `{"type":"object"}` {
		t.Errorf("Lookup(locked_sign_in) = %+v, want the sign-in stand-in", en)
	}
	if en := c.Lookup("nope"); en != nil {
		t.Errorf("Lookup(nope) = %+v, want nil", en)
	}
	if name, ok := c.Name("b2", "x"); !ok || name != "a_x_3" {
		t.Errorf("Name(b2, x) = %q, %t; want a_x_3", name, ok)
	}
	if _, ok := c.Name("locked", SignInName); ok {
		t.Error("the sign-in stand-in is named as a server's tool")
	}
	if got := c.Listed(); len(got) != len(want) || got[6].Name != "a_x_3" {
		t.Errorf("Listed = %v", got)
	}

	// Without the agent, ask is a tool's like any other; a listing that
	// failed otherwise keeps what it read, and is built again soon too.
	ex.Agent = false
	c, collisions = Build(0, ex, []Listing{{Up: &server{cfg: mcpconfig.ServerConfig{Name: "", Enabled: true}}, Tools: a.pages[0].Tools},
		{Up: b, Tools: b.pages[0].Tools, Err: errors.New("too many pages")}})
	if got := c.Names(); !slices.Equal(got, []string{"x", "ask", "y", "b_y"}) || collisions != nil || c.RetryAt().IsZero() {
		t.Errorf("without the agent: names %v, collisions %v, retry at %v", got, collisions, c.RetryAt())
	}
	c, _ = Build(0, ex, []Listing{{Up: a, Tools: a.pages[0].Tools}, {Up: b}})
	if !c.RetryAt().IsZero() {
		t.Errorf("a catalogue of every server is built again at %v, want never", c.RetryAt())
	}
}

// TestBuildLongNames: names longer than MaxLen are cut, and stay unique.
func TestBuildLongNames(t *testing.T) {
	long := strings.Repeat("x", 80)
	s := listing("s", long, long+"y", long)
	c, collisions := Build(0, mcpconfig.DefaultExpose(), []Listing{{Up: s, Tools: s.pages[0].Tools}})
	seen := map[string]bool{}
	for _, n := range c.Names() {
		if len(n) > names.MaxLen || seen[n] {
			t.Errorf("name %q: too long or listed twice", n)
		}
		seen[n] = true
	}
	if len(collisions) != 1 {
		t.Errorf("collisions %v, want the second %s", collisions, long)
	}
}

func TestMode(t *testing.T) {
	small := &Catalog{entries: make([]Entry, 3)}
	for _, tt := range []struct {
		mode string
		c    *Catalog
		want string
	}{
		{mcpconfig.ExposeAuto, small, mcpconfig.ExposeTools},
		{mcpconfig.ExposeAuto, &Catalog{entries: make([]Entry, 4)}, mcpconfig.ExposeSearch},
		{mcpconfig.ExposeAuto, nil, mcpconfig.ExposeTools},
		{mcpconfig.ExposeSearch, small, mcpconfig.ExposeSearch},
		{mcpconfig.ExposeTools, &Catalog{entries: make([]Entry, 4)}, mcpconfig.ExposeTools},
		{mcpconfig.ExposeGateways, small, mcpconfig.ExposeGateways},
	} {
		if got := Mode(mcpconfig.Expose{Mode: tt.mode, MaxTools: 3}, tt.c); got != tt.want {
			t.Errorf("Mode(%s, %p) = %s, want %s", tt.mode, tt.c, got, tt.want)
		}
	}
}
