package store

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
)

// Vault keeps values that must never be stored in clear: users' OAuth
// tokens per MCP server, and users' own secrets by name. Each value is
// sealed with AES-256-GCM under the store's secret key, with a random nonce
// per value and the row's key (server and user, or user and name) as
// additional data, so that a sealed value copied to another row does not
// open. Values are opaque bytes to the Vault (a token is its JSON).
//
// A Vault is safe for concurrent use, and several replicas on one
// PostgreSQL database share what it holds when they share the key. Its
// errors never carry a value.
type Vault struct {
	s      *Store
	sealer *Sealer
}

// sealPrefix marks the format of a sealed value: base64 of the nonce then
// the ciphertext, under the key that secret_key_check holds the proof of.
const sealPrefix = "v1:"

// keyCheckValue is what secret_key_check holds, sealed, to tell a wrong key
// at start-up rather than at a user's first call.
const keyCheckValue = "elysia secret key check"

// OpenVault returns the Vault of s sealing with key (SecretKeySize bytes,
// see Store.SecretKey). The first key a database is opened with is the one
// it keeps: a different key afterwards is an error matching ErrWrongKey,
// since nothing sealed before could be opened. ctx bounds that check.
func OpenVault(ctx context.Context, s *Store, key []byte) (*Vault, error) {
	sealer, err := NewSealer(key)
	if err != nil {
		return nil, err
	}
	v := &Vault{s: s, sealer: sealer}
	if err := v.checkKey(ctx); err != nil {
		return nil, err
	}
	return v, nil
}

// checkKey proves key against the database's key check, writing one when
// the database has none yet (the first replica to get there wins).
func (v *Vault) checkKey(ctx context.Context) (err error) {
	ctx, end := v.s.call(ctx)
	defer end(&err)
	if err := v.s.check(); err != nil {
		return err
	}
	ad := []byte("key check")
	if _, err := v.s.db.ExecContext(ctx, v.s.q(`INSERT INTO secret_key_check (id, sealed) VALUES (1, ?) ON CONFLICT (id) DO NOTHING`),
		v.seal([]byte(keyCheckValue), ad)); err != nil {
		return fmt.Errorf("check secret key: %w", err)
	}
	var sealed string
	if err := v.s.db.QueryRowContext(ctx, `SELECT sealed FROM secret_key_check WHERE id = 1`).Scan(&sealed); err != nil {
		return fmt.Errorf("check secret key: %w", err)
	}
	if got, err := v.open(sealed, ad); err != nil || string(got) != keyCheckValue {
		return fmt.Errorf("%w: tokens and secrets in %s were sealed with another key (ELYSIA_SECRET_KEY or %s)", ErrWrongKey, v.s.where, KeyFileName)
	}
	return nil
}

// seal encrypts value with a fresh nonce, binding ad.
func (v *Vault) seal(value, ad []byte) string { return v.sealer.Seal(value, ad) }

// open decrypts what seal returned for the same ad.
func (v *Vault) open(sealed string, ad []byte) ([]byte, error) { return v.sealer.Open(sealed, ad) }

// additional builds the additional data of a row: its kind and key parts,
// each length-prefixed so that no two rows share one.
func additional(kind string, parts ...string) []byte {
	b := []byte(kind)
	for _, p := range parts {
		b = binary.AppendUvarint(b, uint64(len(p)))
		b = append(b, p...)
	}
	return b
}

// Token returns user's sealed-away token for server, opened, or an error
// matching ErrNotFound when there is none.
func (v *Vault) Token(ctx context.Context, server, user string) ([]byte, error) {
	return v.get(ctx, `SELECT sealed FROM oauth_tokens WHERE server = ? AND user_id = ?`,
		fmt.Sprintf("token of user %q for server %q", user, server), additional("oauth token", server, user), server, user)
}

// PutToken seals value and stores it as user's token for server,
// replacing any.
func (v *Vault) PutToken(ctx context.Context, server, user string, value []byte) error {
	return v.put(ctx, `INSERT INTO oauth_tokens (server, user_id, sealed, updated_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (server, user_id) DO UPDATE SET sealed = excluded.sealed, updated_at = excluded.updated_at`,
		fmt.Sprintf("token of user %q for server %q", user, server), additional("oauth token", server, user), value, server, user)
}

// DeleteToken forgets user's token for server; a missing one is not an
// error.
func (v *Vault) DeleteToken(ctx context.Context, server, user string) error {
	return v.del(ctx, `DELETE FROM oauth_tokens WHERE server = ? AND user_id = ?`,
		fmt.Sprintf("token of user %q for server %q", user, server), server, user)
}

// Secret returns user's secret name, opened, or an error matching
// ErrNotFound when there is none.
func (v *Vault) Secret(ctx context.Context, user, name string) ([]byte, error) {
	return v.get(ctx, `SELECT sealed FROM user_secrets WHERE user_id = ? AND name = ?`,
		fmt.Sprintf("secret %q of user %q", name, user), additional("user secret", user, name), user, name)
}

// MaxSecretsPerUser is how many secrets one user may keep. PutSecret
// refuses a new name beyond it; replacing a kept one is always allowed, and
// secrets kept before the cap existed stay.
const MaxSecretsPerUser = 100

// PutSecret seals value and stores it as user's secret name, replacing any.
// A new name when the user already keeps MaxSecretsPerUser secrets is an
// error matching ErrTooManySecrets, and nothing changes.
func (v *Vault) PutSecret(ctx context.Context, user, name string, value []byte) (err error) {
	if err := v.s.check(user, name); err != nil {
		return err
	}
	what := fmt.Sprintf("secret %q of user %q", name, user)
	defer func() {
		if err != nil && !errors.Is(err, ErrTooManySecrets) {
			err = fmt.Errorf("put %s: %w", what, err)
		}
	}()
	tx, err := v.s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }() // sql.ErrTxDone after Commit
	if v.s.dialect == dialectPostgres {
		// One user's puts go one at a time (SQLite's immediate
		// transactions do that by themselves), so that two new names put
		// at once cannot both pass the count.
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, userSecretsKey(user)); err != nil {
			return err
		}
	}
	var kept, same int
	if err := tx.QueryRowContext(ctx, v.s.q(`SELECT COUNT(*), COUNT(CASE WHEN name = ? THEN 1 END) FROM user_secrets WHERE user_id = ?`),
		name, user).Scan(&kept, &same); err != nil {
		return err
	}
	if same == 0 && kept >= MaxSecretsPerUser {
		return fmt.Errorf("user %q keeps %d secrets, the most a user may keep (%d): delete one before adding %q: %w",
			user, kept, MaxSecretsPerUser, name, ErrTooManySecrets)
	}
	if _, err := tx.ExecContext(ctx, v.s.q(`INSERT INTO user_secrets (user_id, name, sealed, updated_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (user_id, name) DO UPDATE SET sealed = excluded.sealed, updated_at = excluded.updated_at`),
		user, name, v.seal(value, additional("user secret", user, name)), v.s.now().UnixMicro()); err != nil {
		return err
	}
	return tx.Commit()
}

// userSecretsKey is the PostgreSQL advisory lock that orders one user's
// PutSecret calls.
func userSecretsKey(userID string) int64 {
	h := fnv.New64a()
	h.Write([]byte("elysia/user-secrets\x00"))
	h.Write([]byte(userID))
	return int64(h.Sum64())
}

// DeleteSecret forgets user's secret name; a missing one is not an error.
func (v *Vault) DeleteSecret(ctx context.Context, user, name string) error {
	return v.del(ctx, `DELETE FROM user_secrets WHERE user_id = ? AND name = ?`,
		fmt.Sprintf("secret %q of user %q", name, user), user, name)
}

func (v *Vault) get(ctx context.Context, query, what string, ad []byte, a, b string) (_ []byte, err error) {
	ctx, end := v.s.call(ctx)
	defer end(&err)
	if err := v.s.check(a, b); err != nil {
		return nil, err
	}
	var sealed string
	err = v.s.db.QueryRowContext(ctx, v.s.q(query), a, b).Scan(&sealed)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%s: %w", what, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", what, err)
	}
	value, err := v.open(sealed, ad)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w (%w)", what, ErrWrongKey, err)
	}
	return value, nil
}

func (v *Vault) put(ctx context.Context, query, what string, ad, value []byte, a, b string) (err error) {
	ctx, end := v.s.call(ctx)
	defer end(&err)
	if err := v.s.check(a, b); err != nil {
		return err
	}
	if _, err := v.s.db.ExecContext(ctx, v.s.q(query), a, b, v.seal(value, ad), v.s.now().UnixMicro()); err != nil {
		return fmt.Errorf("put %s: %w", what, err)
	}
	return nil
}

func (v *Vault) del(ctx context.Context, query, what, a, b string) (err error) {
	ctx, end := v.s.call(ctx)
	defer end(&err)
	if err := v.s.check(a, b); err != nil {
		return err
	}
	if _, err := v.s.db.ExecContext(ctx, v.s.q(query), a, b); err != nil {
		return fmt.Errorf("delete %s: %w", what, err)
	}
	return nil
}

// vaultMigration creates the Vault's tables; integer is the dialect's
// 64-bit integer type. They stand apart from the users table: a token or
// secret may be stored for a user who has no conversation yet.
func vaultMigration(integer string) []string {
	return []string{
		`CREATE TABLE oauth_tokens (
			server TEXT NOT NULL,
			user_id TEXT NOT NULL,
			sealed TEXT NOT NULL,
			updated_at ` + integer + ` NOT NULL,
			PRIMARY KEY (server, user_id))`,
		`CREATE TABLE user_secrets (
			user_id TEXT NOT NULL,
			name TEXT NOT NULL,
			sealed TEXT NOT NULL,
			updated_at ` + integer + ` NOT NULL,
			PRIMARY KEY (user_id, name))`,
		`CREATE TABLE secret_key_check (
			id INTEGER PRIMARY KEY,
			sealed TEXT NOT NULL)`,
	}
}
