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
// and hands it out once.

// PutPending seals value and keeps it as the sign-in of state until
// expires, dropping the sign-ins that expired.
func (v *Vault) PutPending(ctx context.Context, state string, value []byte, expires time.Time) error {
	key, err := v.pendingKey(state)
	if err != nil {
		return err
	}
	now := v.s.now().UnixMicro()
	if _, err := v.s.db.ExecContext(ctx, v.s.q(`DELETE FROM oauth_pending WHERE expires_at < ?`), now); err != nil {
		return fmt.Errorf("drop expired sign-ins: %w", err)
	}
	if _, err := v.s.db.ExecContext(ctx, v.s.q(`INSERT INTO oauth_pending (state_hash, sealed, expires_at) VALUES (?, ?, ?)
		ON CONFLICT (state_hash) DO UPDATE SET sealed = excluded.sealed, expires_at = excluded.expires_at`),
		key, v.seal(value, additional("oauth pending", key)), expires.UTC().UnixMicro()); err != nil {
		return fmt.Errorf("keep a sign-in: %w", err)
	}
	return nil
}

// TakePending removes the sign-in of state and returns it, opened. One
// that is missing, already taken or expired is an error matching
// ErrNotFound; of two replicas taking the same state at once, one gets it.
func (v *Vault) TakePending(ctx context.Context, state string) ([]byte, error) {
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
	sum := sha256.Sum256([]byte(state))
	return hex.EncodeToString(sum[:]), nil
}
