package store

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// An MCP server's tools are pinned the first time they are listed: each
// tool's definition, its canonical hash, when and from which of the
// server's copies. Every replica reads the same pins; the gateway holds
// each later listing against them. The store does not compute or check
// hashes: a row edited by hand is returned as it is, for the gateway to
// find that it does not match.

// MaxToolPinDefinition caps [ToolPin.Definition]: a definition is the
// server's to choose, and is kept only to show what changed.
const MaxToolPinDefinition = 64 << 10

// ToolPin is one pinned tool of a server.
type ToolPin struct {
	// Tool is the tool's name as the server lists it.
	Tool string
	// Hash is the hex SHA-256 of the tool's canonical definition.
	Hash string
	// Definition is the canonical definition, JSON, at most
	// MaxToolPinDefinition bytes (the caller cuts a longer one).
	Definition string
	// PinnedAt is when the pin was made or last approved.
	PinnedAt time.Time
	// Copy names the copy of the server the definition came from; "" for
	// the server's own keys.
	Copy string
}

// ToolPins returns server's pins, in tool name order; none (and no error)
// for a server never pinned.
func (s *Store) ToolPins(ctx context.Context, server string) (_ []ToolPin, err error) {
	ctx, end := s.call(ctx)
	defer end(&err)
	if err := s.check(server); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT tool, hash, definition, pinned_at, from_copy FROM tool_pins
		WHERE server = ? ORDER BY tool`), server)
	if err != nil {
		return nil, fmt.Errorf("read the tool pins of %q: %w", server, err)
	}
	defer func() { _ = rows.Close() }()
	var pins []ToolPin
	for rows.Next() {
		var p ToolPin
		var at int64
		if err := rows.Scan(&p.Tool, &p.Hash, &p.Definition, &at, &p.Copy); err != nil {
			return nil, fmt.Errorf("read the tool pins of %q: %w", server, err)
		}
		p.PinnedAt = time.UnixMicro(at).UTC()
		pins = append(pins, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the tool pins of %q: %w", server, err)
	}
	return pins, nil
}

// AddToolPins pins each tool of pins that server has no pin for yet, and
// leaves the others as they are: two replicas listing a new server at once
// keep the first one's pins. A zero PinnedAt means now.
func (s *Store) AddToolPins(ctx context.Context, server string, pins []ToolPin) error {
	return s.putToolPins(ctx, server, pins, `DO NOTHING`)
}

// ReplaceToolPins pins each tool of pins as given, replacing its pin if
// it has one: a person approved the tool's current definition. A zero
// PinnedAt means now.
func (s *Store) ReplaceToolPins(ctx context.Context, server string, pins []ToolPin) error {
	return s.putToolPins(ctx, server, pins, `DO UPDATE SET hash = excluded.hash, definition = excluded.definition,
		pinned_at = excluded.pinned_at, from_copy = excluded.from_copy`)
}

// putToolPins inserts pins in one transaction; onConflict says what
// happens to a tool pinned already.
func (s *Store) putToolPins(ctx context.Context, server string, pins []ToolPin, onConflict string) (err error) {
	ctx, end := s.call(ctx)
	defer end(&err)
	if err := s.check(server); err != nil {
		return err
	}
	for _, p := range pins {
		switch {
		case p.Tool == "" || p.Hash == "":
			return fmt.Errorf("pin a tool of %q: empty tool name or hash", server)
		case len(p.Definition) > MaxToolPinDefinition:
			return fmt.Errorf("pin tool %q of %q: definition of %d bytes, at most %d", p.Tool, server, len(p.Definition), MaxToolPinDefinition)
		}
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("pin the tools of %q: %w", server, err)
	}
	defer func() { _ = tx.Rollback() }() // sql.ErrTxDone after Commit
	now := s.now()
	for _, p := range pins {
		at := p.PinnedAt
		if at.IsZero() {
			at = now
		}
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO tool_pins (server, tool, hash, definition, pinned_at, from_copy)
			VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (server, tool) `+onConflict),
			server, p.Tool, p.Hash, p.Definition, at.UnixMicro(), p.Copy); err != nil {
			return fmt.Errorf("pin tool %q of %q: %w", p.Tool, server, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("pin the tools of %q: %w", server, err)
	}
	return nil
}

// DeleteToolPins removes server's pins of tools, or all of its pins when
// tools is empty (the next listing pins afresh), and returns how many it
// removed.
func (s *Store) DeleteToolPins(ctx context.Context, server string, tools ...string) (_ int, err error) {
	ctx, end := s.call(ctx)
	defer end(&err)
	if err := s.check(server); err != nil {
		return 0, err
	}
	query, args := `DELETE FROM tool_pins WHERE server = ?`, []any{server}
	if len(tools) > 0 {
		query += ` AND tool IN (?` + strings.Repeat(`, ?`, len(tools)-1) + `)`
		for _, t := range tools {
			args = append(args, t)
		}
	}
	res, err := s.db.ExecContext(ctx, s.q(query), args...)
	if err != nil {
		return 0, fmt.Errorf("remove the tool pins of %q: %w", server, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("remove the tool pins of %q: %w", server, err)
	}
	return int(n), nil
}
