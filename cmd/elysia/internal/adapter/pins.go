package adapter

import (
	"context"
	"errors"
	"fmt"

	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/store"
	"github.com/elysia-go/elysia/web"
)

// StorePins is the gateways' PinStore over the store's tool_pins table,
// shared by every replica on the database.
type StorePins struct{ Store *store.Store }

var (
	_ mcpgateway.PinStore    = StorePins{}
	_ mcpgateway.PinResetter = StorePins{}
	_ web.ServerPins         = Servers{}
)

// Pins implements mcpgateway.PinStore.
func (p StorePins) Pins(ctx context.Context, server string) ([]mcpgateway.Pin, error) {
	rows, err := p.Store.ToolPins(ctx, server)
	if err != nil {
		return nil, err
	}
	pins := make([]mcpgateway.Pin, len(rows))
	for i, r := range rows {
		pins[i] = mcpgateway.Pin{Tool: r.Tool, Hash: r.Hash, Definition: r.Definition, PinnedAt: r.PinnedAt, Copy: r.Copy}
	}
	return pins, nil
}

// AddPins implements mcpgateway.PinStore.
func (p StorePins) AddPins(ctx context.Context, server string, pins []mcpgateway.Pin) error {
	return p.Store.AddToolPins(ctx, server, toolPins(pins))
}

// ReplacePins implements mcpgateway.PinStore.
func (p StorePins) ReplacePins(ctx context.Context, server string, pins []mcpgateway.Pin) error {
	return p.Store.ReplaceToolPins(ctx, server, toolPins(pins))
}

// DeletePins implements mcpgateway.PinResetter.
func (p StorePins) DeletePins(ctx context.Context, server string) (int, error) {
	return p.Store.DeleteToolPins(ctx, server)
}

func toolPins(pins []mcpgateway.Pin) []store.ToolPin {
	out := make([]store.ToolPin, len(pins))
	for i, p := range pins {
		out[i] = store.ToolPin{Tool: p.Tool, Hash: p.Hash, Definition: p.Definition, PinnedAt: p.PinnedAt, Copy: p.Copy}
	}
	return out
}

// ApprovePins implements web.ServerPins.
func (a Servers) ApprovePins(ctx context.Context, name string, tools []string) ([]string, error) {
	g, err := a.gateway(name)
	if err != nil {
		return nil, err
	}
	approved, err := g.ApprovePins(ctx, tools...)
	if errors.Is(err, mcpgateway.ErrNothingPending) {
		return nil, categorized{web.ErrNothingPending, err}
	}
	if err != nil {
		return nil, pinsErr(g, err)
	}
	return approved, nil
}

// ResetPins implements web.ServerPins.
func (a Servers) ResetPins(ctx context.Context, name string) (int, error) {
	g, err := a.gateway(name)
	if err != nil {
		return 0, err
	}
	n, err := g.ResetPins(ctx)
	if err != nil {
		return 0, pinsErr(g, err)
	}
	return n, nil
}

// pinsErr is the error of an approval or reset: a service without a
// database cannot keep pins (409 with its text), a database that fails is
// this service's failure, not the MCP server's.
func pinsErr(g *mcpgateway.Gateway, err error) error {
	if errors.Is(err, mcpgateway.ErrNoPinStore) {
		return categorized{web.ErrLimit, fmt.Errorf("%w (the service runs without a database)", err)}
	}
	if errors.Is(err, store.ErrUnavailable) {
		return categorized{web.ErrUnavailable, err}
	}
	return gatewayErr(g, err)
}

// toolChanges copies the gateway's tool changes into web's type, the
// definitions masked with mask (a server may echo a secret of its
// configuration in a description).
func toolChanges(cs []mcpgateway.ToolChange, mask func(string) string) []web.ToolChange {
	if len(cs) == 0 {
		return nil
	}
	out := make([]web.ToolChange, len(cs))
	for i, c := range cs {
		out[i] = web.ToolChange{Name: c.Name, Change: c.Change, Reason: c.Reason, Old: mask(c.Old), New: mask(c.New), Held: c.Held, PinnedAt: c.PinnedAt}
	}
	return out
}
