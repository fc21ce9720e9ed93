package store

import "errors"

// ErrNotFound is returned when the user or conversation asked for does not
// exist (for that user).
var ErrNotFound = errors.New("not found")

// ErrClosed is returned by the methods of a [Store] after [Store.Close].
var ErrClosed = errors.New("store closed")

// ErrNoSecretKey is matched by [Store.SecretKey]'s error when the store
// has no place for a key file (PostgreSQL) and none was given.
var ErrNoSecretKey = errors.New("no secret key")

// ErrWrongKey is matched by a [Vault]'s errors when the secret key does not
// open what the database holds: it was sealed under another key (or
// altered).
var ErrWrongKey = errors.New("wrong secret key")

// ErrTooMany is matched by [Vault.PutPending]'s and [Vault.PendingRoom]'s
// error when the user, or all users, have as many sign-ins waiting as the
// caller allows.
var ErrTooMany = errors.New("too many")
