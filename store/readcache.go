package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"sync"
	"sync/atomic"

	"modernc.org/sqlite"
)

// The reads every query makes on SQLite — its conversation's version (is
// the copy in memory the latest?), the user's config in force, and for a
// new conversation the user's record — answer the same until something
// writes what they read. A Store on SQLite has one connection, so it knows
// what it writes itself; what another connection writes (the CLI, a second
// process on the same file) SQLite tells it: PRAGMA data_version changes
// when, and only when, another connection has committed. readCache keeps
// those answers and serves them while data_version stands still, at the
// cost of that one pragma instead of the reads (7 against 29 µs idle, and
// up to 110 µs under load: BENCHMARKS.md, issue 29).
//
// PostgreSQL has no such counter across replicas: its Store reads every
// time (reads is nil).

// maxCachedReads bounds each of readCache's maps; a full map is emptied
// (the answers are read again, once each).
const maxCachedReads = 1 << 16

// dataVersionQuery is SQLite's count of the commits of other connections.
const dataVersionQuery = `PRAGMA data_version`

type readCache struct {
	// conns counts the connections the Store's pool has opened: data_version
	// is a connection's own counter, so one from a new connection is not
	// compared with an old one's.
	conns atomic.Uint64

	// mu guards the rest.
	mu sync.Mutex
	// valid says dataVersion and connsSeen hold what the last check read.
	valid       bool
	dataVersion int64
	connsSeen   uint64
	// epoch counts the times the maps were emptied (another connection
	// wrote, or this Store wrote what they hold); a read fills a map only
	// when the epoch it read in is still the current one.
	epoch uint64

	versions map[convRef]int64
	users    map[string]User
	configs  map[string]configAnswer
}

// convRef names a conversation in readCache.versions.
type convRef struct{ user, conv string }

// configAnswer is what InForceUserConfig read for a user and a fallback
// id: the config, or none. It is kept by user, so that a write of the
// user's configs drops it at once.
type configAnswer struct {
	fallback string
	config   UserConfig
	found    bool
}

func newReadCache() *readCache {
	return &readCache{
		versions: make(map[convRef]int64),
		users:    make(map[string]User),
		configs:  make(map[string]configAnswer),
	}
}

// countingConnector counts the connections it opens in n.
type countingConnector struct {
	driver.Connector
	n *atomic.Uint64
}

func (c countingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err == nil {
		c.n.Add(1)
	}
	return conn, err
}

// current reads data_version and returns the epoch whose answers hold now:
// when another connection has committed since the last check, or the pool
// opened another connection, the maps are emptied first. ok is false when
// the pragma could not be read: the caller reads the database.
func (s *Store) currentReads(ctx context.Context) (epoch uint64, ok bool) {
	r := s.reads
	if r == nil {
		return 0, false
	}
	var v int64
	if err := s.queryRow(ctx, s.db, dataVersionQuery).Scan(&v); err != nil {
		return 0, false
	}
	conns := r.conns.Load() // after the pragma: a connection it ran on has been counted
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.valid || v != r.dataVersion || conns != r.connsSeen {
		r.emptyLocked()
		r.valid, r.dataVersion, r.connsSeen = true, v, conns
	}
	return r.epoch, true
}

// emptyLocked forgets every answer and starts a new epoch.
func (r *readCache) emptyLocked() {
	clear(r.versions)
	clear(r.users)
	clear(r.configs)
	r.epoch++
}

// version returns the conversation's version as this Store last wrote or
// read it in epoch.
func (r *readCache) version(epoch uint64, ref convRef) (int64, bool) {
	return lookup(r, epoch, r.versions, ref)
}

// readVersion keeps a version read in epoch, unless the epoch has ended or
// a save has set it meanwhile (a save's is the newer).
func (r *readCache) readVersion(epoch uint64, ref convRef, v int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, set := r.versions[ref]; set || epoch != r.epoch {
		return
	}
	putLocked(r, r.versions, ref, v)
}

// begun returns the epoch a save starts in, for saved.
func (r *readCache) begun() uint64 {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.epoch
}

// saved records the version v a committed save of this Store, begun in
// epoch, gave the conversation. The saves of one group commit tell their
// callers together, who record in any order: a version is kept only over
// an older one. When the epoch has ended meanwhile (another connection
// wrote and a read saw it, or this Store deleted the conversation), v may
// be older than what is stored: the conversation is read again instead.
func (r *readCache) saved(epoch uint64, ref convRef, v int64) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if epoch != r.epoch {
		delete(r.versions, ref)
		return
	}
	if old, ok := r.versions[ref]; ok && old >= v {
		return
	}
	putLocked(r, r.versions, ref, v)
}

// forgetConversation drops what is known of the conversation: a save that
// failed (it may have committed all the same) or a delete.
func (r *readCache) forgetConversation(ref convRef) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.versions, ref)
	r.epoch++ // a read in flight may have seen the conversation before
}

// user returns the user as read in epoch.
func (r *readCache) user(epoch uint64, id string) (User, bool) {
	return lookup(r, epoch, r.users, id)
}

// readUser keeps a user read in epoch. Only users found are kept: a save
// creates the user it names.
func (r *readCache) readUser(epoch uint64, u User) { keep(r, epoch, r.users, u.ID, u) }

// config returns the user's InForceUserConfig answer for fallback read in
// epoch.
func (r *readCache) config(epoch uint64, user, fallback string) (configAnswer, bool) {
	a, ok := lookup(r, epoch, r.configs, user)
	return a, ok && a.fallback == fallback
}

// readConfig keeps the user's InForceUserConfig answer read in epoch.
func (r *readCache) readConfig(epoch uint64, user string, a configAnswer) {
	keep(r, epoch, r.configs, user, a)
}

// lookup returns m[k] when it holds in epoch.
func lookup[K comparable, V any](r *readCache, epoch uint64, m map[K]V, k K) (V, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := m[k]
	return v, ok && epoch == r.epoch
}

// keep sets m[k] to v, read in epoch, unless the epoch has ended.
func keep[K comparable, V any](r *readCache, epoch uint64, m map[K]V, k K, v V) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if epoch == r.epoch {
		putLocked(r, m, k, v)
	}
}

// putLocked sets m[k] to v. A full map empties the cache and starts a new
// epoch instead, keeping nothing: an answer kept over what a save set and
// the emptying dropped would be older than the save's.
func putLocked[K comparable, V any](r *readCache, m map[K]V, k K, v V) {
	if len(m) >= maxCachedReads {
		r.emptyLocked()
		return
	}
	m[k] = v
}

// userWritten drops what is known of the user's record and configs, before
// and after a write of them (a read in flight may have seen them before).
func (r *readCache) userWritten(id string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.users, id)
	delete(r.configs, id)
	r.epoch++
}

// openSQLite opens the pool of the SQLite database dsn, counting its
// connections for s.reads.
func (s *Store) openSQLite(dsn string) (*sql.DB, error) {
	s.reads = newReadCache()
	base, err := sqlite.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(countingConnector{Connector: base, n: &s.reads.conns}), nil
}
