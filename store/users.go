package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unsafe"
)

// User is a user's record. Users are created on first use; the service has
// no sign-up.
type User struct {
	// ID is the user id from the URL path or the API key.
	ID string
	// CreatedAt is when the user was first seen, in UTC.
	CreatedAt time.Time
	// Config is the user's settings as the web layer encodes them; nil when
	// never set.
	Config json.RawMessage
}

// EnsureUser creates the user userID unless it exists, and reports whether
// it already existed.
func (s *Store) EnsureUser(ctx context.Context, userID string) (existed bool, err error) {
	ctx, end := s.call(ctx)
	defer end(&err)
	if err := s.check(userID); err != nil {
		return false, err
	}
	res, err := s.db.ExecContext(ctx, s.q(`INSERT INTO users (id, created_at) VALUES (?, ?) ON CONFLICT (id) DO NOTHING`),
		userID, s.now().UnixMicro())
	if err != nil {
		return false, fmt.Errorf("ensure user %q: %w", userID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("ensure user %q: %w", userID, err)
	}
	return n == 0, nil
}

// GetUser returns the user userID, or [ErrNotFound].
func (s *Store) GetUser(ctx context.Context, userID string) (_ *User, err error) {
	ctx, end := s.call(ctx)
	defer end(&err)
	if err := s.check(userID); err != nil {
		return nil, err
	}
	epoch, cached := s.currentReads(ctx)
	if cached {
		if u, ok := s.reads.user(epoch, userID); ok {
			u.Config = bytes.Clone(u.Config)
			return &u, nil
		}
	}
	var (
		created int64
		config  sql.NullString
	)
	// Prepared once: a query on a new conversation reads its user's ops.
	err = s.queryRow(ctx, s.db, selectUser, userID).Scan(&created, &config)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("user %q: %w", userID, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get user %q: %w", userID, err)
	}
	u := User{ID: userID, CreatedAt: fromMicros(created), Config: rawJSON(config)}
	if cached {
		s.reads.readUser(epoch, u)
		u.Config = bytes.Clone(u.Config)
	}
	return &u, nil
}

const selectUser = `SELECT created_at, config FROM users WHERE id = ?`

// SaveUser creates the user u.ID or replaces its Config. It sets u.CreatedAt
// to the stored creation time (now for a new user; a CreatedAt given for an
// existing user is ignored).
func (s *Store) SaveUser(ctx context.Context, u *User) (err error) {
	ctx, end := s.call(ctx)
	defer end(&err)
	if u == nil {
		return errors.New("save user: nil user")
	}
	if err := s.check(u.ID); err != nil {
		return err
	}
	if err := validJSON("config", u.Config); err != nil {
		return fmt.Errorf("save user %q: %w", u.ID, err)
	}
	created := u.CreatedAt
	if created.IsZero() {
		created = s.now()
	}
	s.reads.userWritten(u.ID)
	defer s.reads.userWritten(u.ID)
	var stored int64
	err = s.db.QueryRowContext(ctx, s.q(`INSERT INTO users (id, created_at, config) VALUES (?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET config = excluded.config
		RETURNING created_at`), u.ID, created.UnixMicro(), nullJSON(u.Config)).Scan(&stored)
	if err != nil {
		return fmt.Errorf("save user %q: %w", u.ID, err)
	}
	u.CreatedAt = fromMicros(stored)
	return nil
}

// now is the current time as the store keeps it: UTC, microseconds.
func (s *Store) now() time.Time {
	t := time.Now()
	if s.clock != nil {
		t = s.clock()
	}
	return t.UTC().Truncate(time.Microsecond)
}

// fromMicros turns a stored timestamp back into a time.Time in UTC.
func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

// nullJSON turns a JSON blob into a statement's argument: NULL when
// empty, else a string borrowing b (see borrowed). The columns are text,
// in both dialects, so that JSON comes back byte for byte; PostgreSQL's
// jsonb would reorder object keys.
func nullJSON(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	return borrowed(b)
}

// borrowed returns b's bytes as a string without copying them, for a
// statement's argument, which the caller does not change until the
// statement returns. Both drivers copy an argument before they return
// (modernc binds a C copy of it, pgx encodes it into its buffer), and
// database/sql keeps none, so a save's blobs, tens of KB a query, are not
// copied once more on the way.
func borrowed(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// rawJSON is the inverse of nullJSON.
func rawJSON(ns sql.NullString) json.RawMessage {
	if !ns.Valid {
		return nil
	}
	return json.RawMessage(ns.String)
}

// validJSON checks a blob about to be stored; empty means absent.
func validJSON(field string, b json.RawMessage) error {
	if len(b) > 0 && !json.Valid(b) {
		return fmt.Errorf("%s is not valid JSON", field)
	}
	return nil
}
