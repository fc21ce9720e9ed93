// Package store saves and loads users and conversations: DESIGN.md,
// "Persistence (store/)".
//
// Two backends sit behind one [Store]: SQLite (the default, a single file,
// through the pure-Go driver modernc.org/sqlite, so nothing needs cgo or an
// install) and PostgreSQL (through github.com/jackc/pgx/v5), chosen by the
// data source name given to [Open]. PostgreSQL is the backend for several
// replicas behind one load balancer: everything a replica needs is in the
// database, and [Store.Lock] serialises a conversation's queries across
// replicas with a lease, a row naming the holder that expires unless
// renewed, and fences the saves of a holder that lost it.
//
// The store knows nothing of trees, tools or envelopes: the tree operations,
// the conversation history, the environment and each event are opaque JSON
// ([encoding/json.RawMessage]) kept byte for byte. The key of a conversation
// is the pair (user id, conversation id), so users never see each other's
// conversations even when they pick the same conversation id.
//
// The schema is created and migrated by [Open]; its version is kept in the
// schema_version table. Timestamps are stored as microseconds since the Unix
// epoch and come back in UTC.
//
// Package store imports no other package of this module; its only
// third-party imports are the two database drivers.
package store
