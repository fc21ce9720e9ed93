package store

import (
	"strings"
	"testing"
	"time"
)

// TestToolPins: pins added by one Store are read by another on the same
// database (a replica); adding again keeps the first pin (two replicas
// listing a new server at once), replacing takes the new definition,
// deleting one tool or all of a server's pins leaves the other servers'
// pins, and a definition over MaxToolPinDefinition is refused.
func TestToolPins(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			dsn := b.dsn(t)
			a, r := openStore(t, dsn), openStore(t, dsn)
			at := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
			if pins, err := r.ToolPins(ctx, "weather"); err != nil || len(pins) != 0 {
				t.Fatalf("pins of a server never pinned: %v, %v", pins, err)
			}
			first := []ToolPin{
				{Tool: "forecast", Hash: "aa", Definition: `{"name":"forecast"}`, PinnedAt: at, Copy: "primary"},
				{Tool: "alerts", Hash: "bb", Definition: `{"name":"alerts"}`, PinnedAt: at},
			}
			if err := a.AddToolPins(ctx, "weather", first); err != nil {
				t.Fatal(err)
			}
			if err := a.AddToolPins(ctx, "other", []ToolPin{{Tool: "x", Hash: "cc", Definition: "{}"}}); err != nil {
				t.Fatal(err)
			}
			// A second replica's first listing, with another definition.
			if err := r.AddToolPins(ctx, "weather", []ToolPin{{Tool: "forecast", Hash: "zz", Definition: `{}`}}); err != nil {
				t.Fatal(err)
			}
			pins, err := r.ToolPins(ctx, "weather")
			if err != nil {
				t.Fatal(err)
			}
			want := []ToolPin{first[1], first[0]} // by name
			if len(pins) != 2 || pins[0] != want[0] || pins[1] != want[1] {
				t.Fatalf("pins on the replica:\n%+v\nwant\n%+v", pins, want)
			}

			if err := r.ReplaceToolPins(ctx, "weather", []ToolPin{{Tool: "forecast", Hash: "dd", Definition: `{"v":2}`}}); err != nil {
				t.Fatal(err)
			}
			pins, _ = a.ToolPins(ctx, "weather")
			if len(pins) != 2 || pins[1].Hash != "dd" || pins[1].Definition != `{"v":2}` || !pins[1].PinnedAt.After(at) || pins[1].Copy != "" {
				t.Errorf("after replace: %+v", pins)
			}

			if n, err := a.DeleteToolPins(ctx, "weather", "alerts", "nope"); err != nil || n != 1 {
				t.Errorf("delete alerts: %d, %v; want 1", n, err)
			}
			if n, err := a.DeleteToolPins(ctx, "weather"); err != nil || n != 1 {
				t.Errorf("reset: %d, %v; want 1", n, err)
			}
			if pins, _ := r.ToolPins(ctx, "weather"); len(pins) != 0 {
				t.Errorf("pins after reset: %+v", pins)
			}
			if pins, _ := r.ToolPins(ctx, "other"); len(pins) != 1 {
				t.Errorf("another server's pins after reset: %+v", pins)
			}

			big := ToolPin{Tool: "big", Hash: "ee", Definition: strings.Repeat("x", MaxToolPinDefinition+1)}
			if err := a.AddToolPins(ctx, "weather", []ToolPin{big}); err == nil {
				t.Error("a definition over MaxToolPinDefinition was kept")
			}
			if err := a.AddToolPins(ctx, "", first); err == nil {
				t.Error("pins of a server with no name were kept")
			}
		})
	}
}
