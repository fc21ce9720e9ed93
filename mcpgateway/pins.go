package mcpgateway

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/elysia-go/elysia/mcpgateway/internal/session"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
	"github.com/elysia-go/elysia/tools"
)

// Pinned tools (DESIGN.md, "Finding, adding and trusting servers"): the
// first listing of a server pins each tool's definition as the server sent
// it; every later listing, on any view and any replica, is held against
// the pins. With "pin": "block" a changed or new tool is held back
// (quarantined) until a person approves it; with "warn" it goes through
// with a warning; with "off" nothing is pinned.

// Pin is one tool's pinned definition.
type Pin struct {
	// Tool is the tool's name as the server lists it.
	Tool string
	// Hash is the hex SHA-256 of Definition as first written (see
	// CanonicalDefinition).
	Hash string
	// Definition is the tool's canonical definition, JSON, cut at
	// MaxPinDefinition bytes.
	Definition string
	// PinnedAt is when it was pinned or approved; zero in a Pin given to
	// the store means now.
	PinnedAt time.Time
	// Copy says where the definition came from: the server's URL or
	// command, masked.
	Copy string
}

// PinStore keeps the servers' pinned tool definitions, shared by every
// replica. Its methods may be called concurrently; each is bounded by its
// ctx. The store does not check hashes: the gateway does.
type PinStore interface {
	// Pins returns server's pins; none (and no error) for a server never
	// pinned.
	Pins(ctx context.Context, server string) ([]Pin, error)
	// AddPins pins each tool of pins that has no pin yet, leaving the
	// others as they are (two replicas listing at once keep the first
	// one's).
	AddPins(ctx context.Context, server string, pins []Pin) error
	// ReplacePins pins each tool of pins as given, replacing its pin.
	ReplacePins(ctx context.Context, server string, pins []Pin) error
}

// PinResetter is a PinStore that can forget a server's pins, so that its
// next listing pins afresh (ResetPins).
type PinResetter interface {
	// DeletePins removes all of server's pins and returns how many.
	DeletePins(ctx context.Context, server string) (int, error)
}

// MaxPinDefinition caps the definition a pin keeps to show what changed;
// the hash covers the whole definition.
const MaxPinDefinition = 64 << 10

// Pin changes.
const (
	// ChangeNew is a tool the server did not list when it was pinned.
	ChangeNew = "new"
	// ChangeChanged is a tool whose definition differs from its pin.
	ChangeChanged = "changed"
)

// ToolChange is a tool whose definition is not the pinned one.
type ToolChange struct {
	// Name is the tool's name.
	Name string `json:"name"`
	// Change is ChangeNew or ChangeChanged.
	Change string `json:"change"`
	// Reason says what changed ("description, input schema", "new tool",
	// ...).
	Reason string `json:"reason"`
	// Old is the pinned definition (JSON, cut at MaxPinDefinition); ""
	// for a new tool. New is the definition the server lists now.
	Old string `json:"old,omitempty"`
	New string `json:"new"`
	// Held is true when the tool is quarantined ("pin": "block"), false
	// when it went through with a warning ("warn").
	Held bool `json:"held"`
	// PinnedAt is when the old definition was pinned; nil for a new tool.
	PinnedAt *time.Time `json:"pinned_at,omitempty"`

	hash string // the hash of New, for an approval
	def  string // New uncut
}

// ErrToolHeld is matched (with errors.Is) by the error of an execute of a
// tool held back because its definition changed since it was pinned. The
// error also matches tools.ErrUnknownTool: to the model the tool is not
// there until a person approves it.
var ErrToolHeld = errors.New("tool held until approved")

// ErrNothingPending is matched by the error of ApprovePins on a server
// with no changed or new tool waiting for approval.
var ErrNothingPending = errors.New("nothing waiting for approval")

// ErrNoPinStore is matched by the error of ApprovePins and ResetPins on a
// gateway without a PinStore.
var ErrNoPinStore = errors.New("no pin store")

// heldToolError is the error of an execute of a held tool.
type heldToolError struct {
	Server string
	Change ToolChange
}

func (e *heldToolError) Error() string {
	what := "its definition changed since it was approved (" + e.Change.Reason + ")"
	if e.Change.Change == ChangeNew {
		what = "it is new since the server's tools were approved"
	}
	return fmt.Sprintf("tool %q of server %q is held until a person approves it: %s; use another tool, or ask an operator to review it (elysia mcp pins approve %s %s)",
		e.Change.Name, e.Server, what, e.Server, e.Change.Name)
}

// Is reports whether target is ErrToolHeld or tools.ErrUnknownTool.
func (e *heldToolError) Is(target error) bool {
	return target == ErrToolHeld || target == tools.ErrUnknownTool
}

// pinTimeout bounds each call to the PinStore.
const pinTimeout = 5 * time.Second

// pinRecheck is how long a listing that holds tools back stays fresh: then
// the next list lists again and reads the pins, so that an approval made on
// another replica (or by the CLI) is taken in.
const pinRecheck = 30 * time.Second

// pinBook is a gateway's view of its pins, shared by its views.
type pinBook struct {
	// gen counts approvals and resets made through this gateway: a
	// listing made before one is stale.
	gen uint64

	mu sync.Mutex
	// changes are the tools of the last listings that differ from their
	// pins, by name.
	changes map[string]ToolChange
	// known is the last pins read, by tool: used when the store cannot be
	// read.
	known map[string]Pin
	// seen is, per tool, the hash and user of the last listing it was in:
	// a different hash for another user is reported.
	seen map[string]seenDef
	// differs names the tools the server gave different users in
	// different definitions.
	differs []string
}

type seenDef struct{ hash, user string }

// canonicalDefinition returns the definition of rt that is pinned, with
// sorted keys and no whitespace, and its hex SHA-256. The description is
// the server's, before CleanDescription.
func canonicalDefinition(rt session.RawTool) (string, string) {
	def := map[string]any{"name": rt.Name, "description": rt.Description}
	for key, raw := range map[string]json.RawMessage{"inputSchema": rt.InputSchema, "outputSchema": rt.OutputSchema, "annotations": rt.Annotations} {
		if len(raw) == 0 || string(raw) == "null" {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			v = string(raw) // not JSON: the bytes are still what is pinned
		}
		def[key] = v
	}
	s := canonicalJSON(def)
	sum := sha256.Sum256([]byte(s))
	return s, hex.EncodeToString(sum[:])
}

// canonicalJSON encodes v with sorted keys (encoding/json sorts map keys),
// no whitespace and no HTML escaping.
func canonicalJSON(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // maps of decoded JSON: it cannot fail
		return ""
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// hashOf returns the hex SHA-256 of s.
func hashOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// cutDefinition returns def cut at MaxPinDefinition bytes, on a rune
// boundary.
func cutDefinition(def string) string {
	if len(def) <= MaxPinDefinition {
		return def
	}
	n := MaxPinDefinition
	for n > 0 && !utf8.RuneStart(def[n]) {
		n--
	}
	return def[:n]
}

// pinning reports whether v's listings are held against pins.
func (v *view) pinning() bool {
	return v.g.opts.Pins != nil && v.cfg.Pin != mcpconfig.PinOff
}

// copyLabel says where v's definitions come from, masked.
func (v *view) copyLabel() string {
	label := v.cfg.URL
	if label == "" {
		label = strings.Join(append([]string{v.cfg.Command}, v.cfg.Args...), " ")
	}
	return v.masker(label)
}

// checkPins holds raw (the tools allow/deny lets through) against the
// server's pins, pinning them all when the server has none, and returns
// the tools to leave out of the listing (those changed or new under
// "block"). A store that cannot be read leaves out every tool not matching
// the last pins read, and says so in the log: never trust by default.
func (v *view) checkPins(ctx context.Context, raw []session.RawTool) map[string]ToolChange {
	g, book := v.g, &v.g.pins
	type listed struct{ def, hash string }
	now := make(map[string]listed, len(raw))
	var order []string
	for _, rt := range raw {
		if rt.Name == "" || !v.allowed(rt.Name) {
			continue
		}
		if _, dup := now[rt.Name]; dup {
			continue
		}
		def, hash := canonicalDefinition(rt)
		now[rt.Name] = listed{def, hash}
		order = append(order, rt.Name)
	}

	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pinTimeout)
	defer cancel()
	pins, err := g.readPins(pctx)
	readErr := err
	if err == nil && len(pins) == 0 && len(order) > 0 {
		// The first listing: trust on first use, every tool pinned.
		add := make([]Pin, 0, len(order))
		for _, name := range order {
			add = append(add, Pin{Tool: name, Hash: now[name].hash, Definition: cutDefinition(now[name].def), Copy: v.copyLabel()})
		}
		if err := g.opts.Pins.AddPins(pctx, g.cfg.Name, add); err != nil {
			v.logger.Error("cannot pin the server's tools: they are let through unpinned this time", logKeyErr, v.masker(err.Error()))
			return nil
		}
		v.logger.Info("pinned the server's tools", "tools", len(add))
		// Another replica may have pinned first: hold against what won.
		pins, readErr = g.readPins(pctx)
	}
	if readErr != nil {
		v.logger.Error("cannot read the server's tool pins: holding back every tool that does not match the last pins read",
			logKeyErr, v.masker(readErr.Error()))
		book.mu.Lock()
		pins = pins[:0]
		for _, p := range book.known {
			pins = append(pins, p)
		}
		book.mu.Unlock()
	}
	byTool := make(map[string]Pin, len(pins))
	for _, p := range pins {
		byTool[p.Tool] = p
	}

	block := v.cfg.Pin == mcpconfig.PinBlock
	held := map[string]ToolChange{}
	book.mu.Lock()
	defer book.mu.Unlock()
	if readErr == nil {
		book.known = byTool
	}
	if book.changes == nil {
		book.changes, book.seen = map[string]ToolChange{}, map[string]seenDef{}
	}
	for _, name := range order {
		l := now[name]
		if s, ok := book.seen[name]; ok && s.hash != l.hash && s.user != v.user && !slices.Contains(book.differs, name) {
			book.differs = append(book.differs, name)
			v.logger.Warn("the server gives different users different definitions of a tool", logKeyTool, name)
		}
		book.seen[name] = seenDef{l.hash, v.user}
		p, pinned := byTool[name]
		if pinned && p.Hash == l.hash && pinIntact(p) {
			delete(book.changes, name)
			continue
		}
		c := ToolChange{Name: name, Change: ChangeNew, Reason: "new tool", New: cutDefinition(l.def), Held: block, hash: l.hash, def: l.def}
		if readErr != nil && !pinned {
			c.Reason = "new tool, or the pins could not be read"
		}
		if pinned {
			at := p.PinnedAt
			c.Change, c.Old, c.PinnedAt = ChangeChanged, p.Definition, &at
			c.Reason = diffDefinitions(p, l.def)
		}
		book.changes[name] = c
		if block {
			held[name] = c
			v.logger.Warn("tool held back until approved: its definition is not the pinned one", logKeyTool, name, "change", c.Reason)
		} else {
			v.logger.Warn(`tool let through with "pin": "warn": its definition is not the pinned one`, logKeyTool, name, "change", c.Reason)
		}
	}
	for name := range book.changes {
		if _, ok := now[name]; !ok {
			delete(book.changes, name) // removed tools simply leave
		}
	}
	return held
}

// readPins reads the server's pins.
func (g *Gateway) readPins(ctx context.Context) ([]Pin, error) {
	return g.opts.Pins.Pins(ctx, g.cfg.Name)
}

// pinIntact reports whether p's hash is that of its definition, as it is
// for every pin the gateway wrote: a pin edited by hand is not trusted. A
// definition cut at MaxPinDefinition (less a rune) cannot be checked.
func pinIntact(p Pin) bool {
	return len(p.Definition) > MaxPinDefinition-utf8.UTFMax || hashOf(p.Definition) == p.Hash
}

// diffDefinitions says what differs between pin p and definition def.
func diffDefinitions(p Pin, def string) string {
	if !pinIntact(p) {
		return "its pin does not match the pinned definition (edited by hand?)"
	}
	var old, cur map[string]json.RawMessage
	if json.Unmarshal([]byte(p.Definition), &old) != nil || json.Unmarshal([]byte(def), &cur) != nil {
		return "definition"
	}
	var parts []string
	for _, f := range []struct{ key, what string }{
		{"description", "description"}, {"inputSchema", "input schema"},
		{"outputSchema", "output schema"}, {"annotations", "annotations"},
	} {
		if !bytes.Equal(old[f.key], cur[f.key]) {
			parts = append(parts, f.what)
		}
	}
	if len(parts) == 0 {
		return "definition"
	}
	return strings.Join(parts, ", ") + " changed"
}

// pinsStale reports whether ts was listed before an approval or reset
// made through g, or holds tools back and was listed over pinRecheck ago.
func (g *Gateway) pinsStale(ts *toolSet) bool {
	g.pins.mu.Lock()
	gen := g.pins.gen
	g.pins.mu.Unlock()
	return ts.pinGen != gen || !ts.pinRecheck.IsZero() && !time.Now().Before(ts.pinRecheck)
}

// pinStatus fills in st's pin fields.
func (g *Gateway) pinStatus(st *Status) {
	if g.opts.Pins == nil {
		return
	}
	st.Pin = g.cfg.Pin.String()
	g.pins.mu.Lock()
	defer g.pins.mu.Unlock()
	for _, c := range g.pins.changes {
		st.ToolChanges = append(st.ToolChanges, c)
	}
	slices.SortFunc(st.ToolChanges, func(a, b ToolChange) int { return strings.Compare(a.Name, b.Name) })
	st.DiffersByUser = slices.Clone(g.pins.differs)
}

// ToolChanges returns the tools of the server's last listings whose
// definitions are not the pinned ones, by name; it does no I/O.
func (g *Gateway) ToolChanges() []ToolChange {
	var st Status
	g.pinStatus(&st)
	return st.ToolChanges
}

// ApprovePins pins the current definitions of names (of every changed or
// new tool when names is empty), so that they are offered again; the
// server's tools are listed first when needed. It returns the tools
// approved. A server with nothing waiting, or a name not waiting, is an
// error matching ErrNothingPending.
func (g *Gateway) ApprovePins(ctx context.Context, names ...string) ([]string, error) {
	if g.opts.Pins == nil {
		return nil, fmt.Errorf("approve the tools of %q: %w", g.cfg.Name, ErrNoPinStore)
	}
	if err := g.enter("approve"); err != nil {
		return nil, err
	}
	defer g.leave()
	if _, err := g.tools(ctx); err != nil {
		return nil, err
	}
	g.pins.mu.Lock()
	var pins []Pin
	var approved []string
	var missing []string
	for _, n := range names {
		if _, ok := g.pins.changes[n]; !ok {
			missing = append(missing, n)
		}
	}
	for name, c := range g.pins.changes {
		if len(names) == 0 || slices.Contains(names, name) {
			pins = append(pins, Pin{Tool: name, Hash: c.hash, Definition: cutDefinition(c.def), Copy: g.shared.copyLabel()})
			approved = append(approved, name)
		}
	}
	g.pins.mu.Unlock()
	switch {
	case len(missing) > 0:
		return nil, fmt.Errorf("approve the tools of %q: %s: %w", g.cfg.Name, strings.Join(missing, ", "), ErrNothingPending)
	case len(pins) == 0:
		return nil, fmt.Errorf("approve the tools of %q: every tool matches its pin: %w", g.cfg.Name, ErrNothingPending)
	}
	pctx, cancel := context.WithTimeout(ctx, pinTimeout)
	defer cancel()
	if err := g.opts.Pins.ReplacePins(pctx, g.cfg.Name, pins); err != nil {
		return nil, fmt.Errorf("approve the tools of %q: %w", g.cfg.Name, err)
	}
	slices.Sort(approved)
	g.logger.Info("tools approved", "tools", strings.Join(approved, ","))
	g.pins.mu.Lock()
	for _, n := range approved {
		delete(g.pins.changes, n)
	}
	g.pins.gen++
	g.pins.mu.Unlock()
	g.relistAfterPins(ctx)
	return approved, nil
}

// relistAfterPins lists the shared view's tools again, when it listed them
// before, after an approval or a reset, so that what lists them (the agent's tree, the aggregate
// endpoint, told through the ToolsObserver) sees the change now rather
// than at the next call. A failure is logged: the next call lists again.
func (g *Gateway) relistAfterPins(ctx context.Context) {
	if g.shared.cached() == nil {
		return // never listed here: nothing shows the old listing
	}
	if _, err := g.shared.toolsHere(ctx); err != nil {
		g.logger.Warn("cannot list the tools again after a change of pins", logKeyErr, g.mask(err.Error()))
	}
}

// ResetPins forgets the server's pins: its next listing pins every tool
// afresh. It returns how many pins it removed.
func (g *Gateway) ResetPins(ctx context.Context) (int, error) {
	r, ok := g.opts.Pins.(PinResetter)
	if !ok {
		return 0, fmt.Errorf("reset the pins of %q: %w", g.cfg.Name, ErrNoPinStore)
	}
	if err := g.enter("reset pins"); err != nil {
		return 0, err
	}
	defer g.leave()
	pctx, cancel := context.WithTimeout(ctx, pinTimeout)
	defer cancel()
	n, err := r.DeletePins(pctx, g.cfg.Name)
	if err != nil {
		return 0, fmt.Errorf("reset the pins of %q: %w", g.cfg.Name, err)
	}
	g.logger.Info("tool pins reset", "pins", n)
	g.pins.mu.Lock()
	g.pins.changes, g.pins.known, g.pins.seen, g.pins.differs = nil, nil, nil, nil
	g.pins.gen++
	g.pins.mu.Unlock()
	g.relistAfterPins(ctx)
	return n, nil
}
