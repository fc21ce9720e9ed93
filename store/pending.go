package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// A web sign-in waits for its callback for a few minutes, and the callback
// may reach any replica: the Vault keeps it, sealed, under the SHA-256 of
// its state (the state itself, a bearer of the sign-in, is never stored),
// with the SHA-256 of its user (for the caps), and hands it out once.

// PendingCaps bounds the sign-ins PutPending keeps waiting: PerUser for
// one user, Total for all users.
type PendingCaps struct{ PerUser, Total int }

// PutPending seals value and keeps it as user's sign-in of state until
// expires, dropping the sign-ins that expired first. When user already has
// caps.PerUser sign-ins waiting, or all users caps.Total, it keeps nothing
// and its error matches ErrTooMany. Two replicas putting at once may each
// see room for one: the caps bound the table, not to the row.
func (v *Vault) PutPending(ctx context.Context, state, user string, value []byte, expires time.Time, caps PendingCaps) (err error) {
	ctx, end := v.s.call(ctx)
	defer end(&err)
	key, err := v.pendingKey(state)
	if err != nil {
		return err
	}
	if err := v.s.check(user); err != nil {
		return err
	}
	tx, err := v.s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("keep a sign-in: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	if err := v.pendingRoom(ctx, tx, user, caps); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, v.s.q(`INSERT INTO oauth_pending (state_hash, user_hash, sealed, expires_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (state_hash) DO UPDATE SET user_hash = excluded.user_hash, sealed = excluded.sealed, expires_at = excluded.expires_at`),
		key, hashHex(user), v.seal(value, additional("oauth pending", key)), expires.UTC().UnixMicro()); err != nil {
		return fmt.Errorf("keep a sign-in: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("keep a sign-in: %w", err)
	}
	return nil
}

// PendingRoom drops the expired sign-ins and returns an error matching
// ErrTooMany when PutPending for user would be refused now.
func (v *Vault) PendingRoom(ctx context.Context, user string, caps PendingCaps) (err error) {
	ctx, end := v.s.call(ctx)
	defer end(&err)
	if err := v.s.check(user); err != nil {
		return err
	}
	tx, err := v.s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("count the sign-ins: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	if err := v.pendingRoom(ctx, tx, user, caps); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("count the sign-ins: %w", err)
	}
	return nil
}

// pendingRoom drops the expired sign-ins in tx and checks user's and the
// total count against caps.
func (v *Vault) pendingRoom(ctx context.Context, tx *sql.Tx, user string, caps PendingCaps) error {
	now := v.s.now().UnixMicro()
	if _, err := tx.ExecContext(ctx, v.s.q(`DELETE FROM oauth_pending WHERE expires_at < ?`), now); err != nil {
		return fmt.Errorf("drop expired sign-ins: %w", err)
	}
	var mine, total int
	if err := tx.QueryRowContext(ctx, v.s.q(`SELECT COUNT(CASE WHEN user_hash = ? THEN 1 END), COUNT(*) FROM oauth_pending`),
		hashHex(user)).Scan(&mine, &total); err != nil {
		return fmt.Errorf("count the sign-ins: %w", err)
	}
	switch {
	case mine >= caps.PerUser:
		return fmt.Errorf("user %q has %d sign-ins waiting for their callback, the most allowed; finish one or wait ten minutes: %w",
			user, mine, ErrTooMany)
	case total >= caps.Total:
		return fmt.Errorf("%d sign-ins are waiting for their callback, the most this service keeps; try again in a few minutes: %w",
			total, ErrTooMany)
	}
	return nil
}

// TakePending removes the sign-in of state and returns it, opened. One
// that is missing, already taken or expired is an error matching
// ErrNotFound; of two replicas taking the same state at once, one gets it.
func (v *Vault) TakePending(ctx context.Context, state string) (_ []byte, err error) {
	ctx, end := v.s.call(ctx)
	defer end(&err)
	key, err := v.pendingKey(state)
	if err != nil {
		return nil, err
	}
	var (
		sealed  string
		expires int64
	)
	err = v.s.db.QueryRowContext(ctx, v.s.q(`DELETE FROM oauth_pending WHERE state_hash = ? RETURNING sealed, expires_at`), key).
		Scan(&sealed, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sign-in: %w", ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("take a sign-in: %w", err)
	}
	if v.s.now().After(fromMicros(expires)) {
		return nil, fmt.Errorf("sign-in expired: %w", ErrNotFound)
	}
	value, err := v.open(sealed, additional("oauth pending", key))
	if err != nil {
		return nil, fmt.Errorf("open a sign-in: %w (%w)", ErrWrongKey, err)
	}
	return value, nil
}

func (v *Vault) pendingKey(state string) (string, error) {
	if err := v.s.check(state); err != nil {
		return "", err
	}
	return hashHex(state), nil
}

// hashHex is the SHA-256 of s in hex.
func hashHex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
