package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"time"
)

// UserConfig is one of a user's named configs (Elysia's Settings page).
type UserConfig struct {
	UserID string
	ID     string
	Name   string
	// Default marks the config the user's queries use; at most one of a
	// user's configs is.
	Default bool
	// Body is the config's settings as the caller encodes them (JSON).
	Body json.RawMessage
	// UpdatedAt is when the config was last saved, in UTC.
	UpdatedAt time.Time
}

// SaveUserConfig creates or replaces the config c.ID of c.UserID (setting
// c.UpdatedAt to now). When c.Default is set the user's other configs stop
// being the default, in the same transaction.
func (s *Store) SaveUserConfig(ctx context.Context, c *UserConfig) (err error) {
	ctx, end := s.call(ctx)
	defer end(&err)
	if err := s.check(c.UserID, c.ID); err != nil {
		return err
	}
	if len(c.Body) == 0 || !json.Valid(c.Body) {
		return fmt.Errorf("save config %q: body is not valid JSON", c.ID)
	}
	c.UpdatedAt = s.now()
	s.reads.userWritten(c.UserID)
	defer s.reads.userWritten(c.UserID)
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("save config %q: %w", c.ID, err)
	}
	defer func() { _ = tx.Rollback() }() // sql.ErrTxDone after Commit
	if s.dialect == dialectPostgres {
		// The user's saves go one at a time, as SQLite's immediate
		// transactions make them: two defaults saved at once would
		// otherwise each miss the other's row and break the unique index,
		// or deadlock on each other's rows.
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, userConfigsKey(c.UserID)); err != nil {
			return fmt.Errorf("save config %q: %w", c.ID, err)
		}
	}
	if c.Default {
		if _, err := s.txExec(ctx, tx, `UPDATE user_configs SET is_default = 0 WHERE user_id = ? AND id <> ? AND is_default = 1`, c.UserID, c.ID); err != nil {
			return fmt.Errorf("save config %q: %w", c.ID, err)
		}
	}
	if _, err := s.txExec(ctx, tx, `INSERT INTO user_configs (user_id, id, name, is_default, body, updated_at)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (user_id, id)
		DO UPDATE SET name = excluded.name, is_default = excluded.is_default, body = excluded.body, updated_at = excluded.updated_at`,
		c.UserID, c.ID, c.Name, boolInt(c.Default), string(c.Body), c.UpdatedAt.UnixMicro()); err != nil {
		return fmt.Errorf("save config %q: %w", c.ID, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("save config %q: %w", c.ID, err)
	}
	return nil
}

// GetUserConfig returns the user's config id, or [ErrNotFound].
func (s *Store) GetUserConfig(ctx context.Context, userID, id string) (_ *UserConfig, err error) {
	ctx, end := s.call(ctx)
	defer end(&err)
	if err := s.check(userID, id); err != nil {
		return nil, err
	}
	return s.oneUserConfig(ctx, fmt.Sprintf("config %q", id),
		`SELECT id, name, is_default, body, updated_at FROM user_configs WHERE user_id = ? AND id = ?`, userID, id)
}

// DefaultUserConfig returns the user's default config, or [ErrNotFound]
// when the user has none.
func (s *Store) DefaultUserConfig(ctx context.Context, userID string) (_ *UserConfig, err error) {
	ctx, end := s.call(ctx)
	defer end(&err)
	if err := s.check(userID); err != nil {
		return nil, err
	}
	return s.oneUserConfig(ctx, "default config",
		`SELECT id, name, is_default, body, updated_at FROM user_configs WHERE user_id = ? AND is_default = 1`, userID)
}

// inForceQuery finds the user's default config, else the one saved under
// the fallback id: one prepared statement, since every query of a user
// reads it.
const inForceQuery = `SELECT id, name, is_default, body, updated_at FROM user_configs
	WHERE user_id = ? AND (is_default = 1 OR id = ?) ORDER BY is_default DESC LIMIT 1`

// InForceUserConfig returns the user's default config, else the config
// saved under fallbackID (reported with Default set, as the one in force),
// or [ErrNotFound] when there is neither.
func (s *Store) InForceUserConfig(ctx context.Context, userID, fallbackID string) (_ *UserConfig, err error) {
	ctx, end := s.call(ctx)
	defer end(&err)
	if err := s.check(userID, fallbackID); err != nil {
		return nil, err
	}
	epoch, cached := s.currentReads(ctx)
	if cached {
		if a, ok := s.reads.config(epoch, userID, fallbackID); ok {
			if !a.found {
				return nil, fmt.Errorf("config in force of user %q: %w", userID, ErrNotFound)
			}
			c := a.config
			c.Body = bytes.Clone(c.Body)
			return &c, nil
		}
	}
	c, err := s.oneUserConfig(ctx, "config in force", inForceQuery, userID, fallbackID)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	if cached {
		a := configAnswer{fallback: fallbackID, found: c != nil}
		if c != nil {
			a.config = *c
			a.config.Default = true
			a.config.Body = bytes.Clone(c.Body)
		}
		s.reads.readConfig(epoch, userID, a)
	}
	if err != nil {
		return nil, err
	}
	c.Default = true
	return c, nil
}

func (s *Store) oneUserConfig(ctx context.Context, what, query string, args ...any) (*UserConfig, error) {
	c := &UserConfig{UserID: args[0].(string)}
	var (
		def     int64
		body    string
		updated int64
	)
	err := s.queryRow(ctx, s.db, query, args...).Scan(&c.ID, &c.Name, &def, &body, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%s of user %q: %w", what, c.UserID, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("%s of user %q: %w", what, c.UserID, err)
	}
	c.Default, c.Body, c.UpdatedAt = def != 0, json.RawMessage(body), fromMicros(updated)
	return c, nil
}

// ListUserConfigs returns the user's configs, the most recently saved
// first.
func (s *Store) ListUserConfigs(ctx context.Context, userID string) (_ []UserConfig, err error) {
	ctx, end := s.call(ctx)
	defer end(&err)
	if err := s.check(userID); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT id, name, is_default, body, updated_at FROM user_configs
		WHERE user_id = ? ORDER BY updated_at DESC, id`), userID)
	if err != nil {
		return nil, fmt.Errorf("configs of user %q: %w", userID, err)
	}
	defer func() { _ = rows.Close() }()
	out := []UserConfig{}
	for rows.Next() {
		c := UserConfig{UserID: userID}
		var (
			def     int64
			body    string
			updated int64
		)
		if err := rows.Scan(&c.ID, &c.Name, &def, &body, &updated); err != nil {
			return nil, fmt.Errorf("configs of user %q: %w", userID, err)
		}
		c.Default, c.Body, c.UpdatedAt = def != 0, json.RawMessage(body), fromMicros(updated)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("configs of user %q: %w", userID, err)
	}
	return out, nil
}

// DeleteUserConfig removes the user's config id, or returns [ErrNotFound].
func (s *Store) DeleteUserConfig(ctx context.Context, userID, id string) (err error) {
	ctx, end := s.call(ctx)
	defer end(&err)
	if err := s.check(userID, id); err != nil {
		return err
	}
	s.reads.userWritten(userID)
	defer s.reads.userWritten(userID)
	res, err := s.db.ExecContext(ctx, s.q(`DELETE FROM user_configs WHERE user_id = ? AND id = ?`), userID, id)
	if err != nil {
		return fmt.Errorf("delete config %q: %w", id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("delete config %q: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("config %q of user %q: %w", id, userID, ErrNotFound)
	}
	return nil
}

// userConfigsKey is the PostgreSQL advisory lock that orders one user's
// config writes. A collision only orders two users' writes.
func userConfigsKey(userID string) int64 {
	h := fnv.New64a()
	h.Write([]byte("elysia/user-configs\x00"))
	h.Write([]byte(userID))
	return int64(h.Sum64())
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
