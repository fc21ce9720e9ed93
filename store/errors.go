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

// ErrUnavailable is matched by the errors of a [Store] call that failed
// because the database is unavailable rather than because of what was
// asked: it refused or dropped the connection, the pool had no free
// connection in time, the call or one of its statements timed out, or the
// database is full or cannot be written. Trying again later may succeed.
// The error's text names the database and holds the driver's detail: log
// it, do not show it.
var ErrUnavailable = errors.New("database unavailable")

// ErrTooManySecrets is matched by [Vault.PutSecret]'s error when the user
// already keeps [MaxSecretsPerUser] secrets and the name is a new one.
var ErrTooManySecrets = errors.New("too many secrets")

// ErrNoBus is returned by [Store.NewBus] on SQLite: one process uses the
// database, and has no other to send messages to.
var ErrNoBus = errors.New("no bus between processes on SQLite")

// ErrLockLost is matched by the error of a save on a conversation whose
// lock ([Store.Lock]) this Store held but lost meanwhile: on PostgreSQL,
// its lease expired (the holder stalled for longer than its time to live)
// and another holder took it. Nothing of the save is written; the query
// that made it has failed.
var ErrLockLost = errors.New("conversation lock lost")
