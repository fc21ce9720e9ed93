package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// The aggregate MCP endpoint's HTTP sessions are kept here so that a
// client's requests may reach any replica: each under the SHA-256 of its
// id (the id itself is a bearer of the session and never stored) and of
// its user, with what the client's initialize said. A session unused for
// the caller's idle time is gone: not found, and deleted by the next Put.

// MaxMCPSessionInit caps [MCPSession.Init]: a client's initialize params
// are the client's to choose.
const MaxMCPSessionInit = 64 << 10

// MCPSession is what a replica needs to serve an MCP session that another
// one opened.
type MCPSession struct {
	// ProtocolVersion is the version the session negotiated.
	ProtocolVersion string
	// Init is the client's initialize params (its capabilities and
	// info), JSON; at most MaxMCPSessionInit bytes.
	Init string
	// LogLevel is the level the client set with logging/setLevel; ""
	// when it set none.
	LogLevel string
}

// PutMCPSession keeps session id of user, used now, first dropping the
// sessions unused for idle. A session id kept already for another user is
// left as it is and the error matches ErrNotFound.
func (s *Store) PutMCPSession(ctx context.Context, id, user string, m MCPSession, idle time.Duration) (err error) {
	ctx, end := s.call(ctx)
	defer end(&err)
	if err := s.check(id, user); err != nil {
		return err
	}
	if len(m.Init) > MaxMCPSessionInit {
		return fmt.Errorf("keep an MCP session: initialize params of %d bytes, at most %d", len(m.Init), MaxMCPSessionInit)
	}
	now := s.now()
	if _, err := s.db.ExecContext(ctx, s.q(`DELETE FROM mcp_sessions WHERE seen_at < ?`), now.Add(-idle).UnixMicro()); err != nil {
		return fmt.Errorf("drop idle MCP sessions: %w", err)
	}
	res, err := s.db.ExecContext(ctx, s.q(`INSERT INTO mcp_sessions (id_hash, user_hash, protocol_version, init, log_level, created_at, seen_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id_hash) DO UPDATE SET protocol_version = excluded.protocol_version, init = excluded.init,
			log_level = excluded.log_level, seen_at = excluded.seen_at
		WHERE mcp_sessions.user_hash = excluded.user_hash`),
		hashHex(id), hashHex(user), m.ProtocolVersion, m.Init, m.LogLevel, now.UnixMicro(), now.UnixMicro())
	if err != nil {
		return fmt.Errorf("keep an MCP session: %w", err)
	}
	return mcpSessionFound(res, "keep an MCP session")
}

// MCPSession returns session id of user, if it was used within idle; else
// the error matches ErrNotFound, as it does for another user's session.
func (s *Store) MCPSession(ctx context.Context, id, user string, idle time.Duration) (_ MCPSession, err error) {
	ctx, end := s.call(ctx)
	defer end(&err)
	if err := s.check(id, user); err != nil {
		return MCPSession{}, err
	}
	var m MCPSession
	err = s.db.QueryRowContext(ctx, s.q(`SELECT protocol_version, init, log_level FROM mcp_sessions
		WHERE id_hash = ? AND user_hash = ? AND seen_at >= ?`),
		hashHex(id), hashHex(user), s.now().Add(-idle).UnixMicro()).Scan(&m.ProtocolVersion, &m.Init, &m.LogLevel)
	if errors.Is(err, sql.ErrNoRows) {
		return MCPSession{}, fmt.Errorf("MCP session: %w", ErrNotFound)
	}
	if err != nil {
		return MCPSession{}, fmt.Errorf("read an MCP session: %w", err)
	}
	return m, nil
}

// TouchMCPSession marks session id of user used now, and sets its log
// level unless level is "". A session missing, another user's or unused
// for idle is an error matching ErrNotFound.
func (s *Store) TouchMCPSession(ctx context.Context, id, user, level string, idle time.Duration) (err error) {
	ctx, end := s.call(ctx)
	defer end(&err)
	if err := s.check(id, user); err != nil {
		return err
	}
	now := s.now()
	res, err := s.db.ExecContext(ctx, s.q(`UPDATE mcp_sessions
		SET seen_at = ?, log_level = CASE WHEN ? = '' THEN log_level ELSE ? END
		WHERE id_hash = ? AND user_hash = ? AND seen_at >= ?`),
		now.UnixMicro(), level, level, hashHex(id), hashHex(user), now.Add(-idle).UnixMicro())
	if err != nil {
		return fmt.Errorf("mark an MCP session used: %w", err)
	}
	return mcpSessionFound(res, "mark an MCP session used")
}

// DeleteMCPSession ends session id of user. A session missing or another
// user's is an error matching ErrNotFound.
func (s *Store) DeleteMCPSession(ctx context.Context, id, user string) (err error) {
	ctx, end := s.call(ctx)
	defer end(&err)
	if err := s.check(id, user); err != nil {
		return err
	}
	res, err := s.db.ExecContext(ctx, s.q(`DELETE FROM mcp_sessions WHERE id_hash = ? AND user_hash = ?`), hashHex(id), hashHex(user))
	if err != nil {
		return fmt.Errorf("end an MCP session: %w", err)
	}
	return mcpSessionFound(res, "end an MCP session")
}

// mcpSessionFound is ErrNotFound, wrapped in what, when res changed no
// row.
func mcpSessionFound(res sql.Result, what string) error {
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if n == 0 {
		return fmt.Errorf("%s: %w", what, ErrNotFound)
	}
	return nil
}
