package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
)

// DefaultSQLitePath is where [Open] puts the SQLite database when given an
// empty data source name. It is relative to the working directory.
const DefaultSQLitePath = "data/elysia.db"

// sqlitePragmas are set on every SQLite connection: WAL so readers never wait
// for the writer, a busy timeout so concurrent writers queue instead of
// failing with SQLITE_BUSY, foreign keys so events go with their
// conversation, and immediate transactions so a transaction that reads then
// writes never fails to upgrade its lock (which busy_timeout cannot retry).
// journal_size_limit cuts the write-ahead log back to 4 MiB, about its size
// at the automatic checkpoint (1000 pages), whenever a checkpoint lets it
// start over: a log that grew beyond, while checkpoints could not complete
// (a full disk, a long reader), would otherwise keep that space for good.
// (After a failed write the group writer truncates it to nothing: see
// groupWriter.shrinkWAL.)
const sqlitePragmas = "_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=journal_size_limit(4194304)&_pragma=foreign_keys(1)&_txlock=immediate"

// dialect is the SQL flavour a Store speaks.
type dialect int

const (
	dialectSQLite dialect = iota
	dialectPostgres
)

// DefaultMaxConns is the default bound on a Store's open PostgreSQL
// connections. PostgreSQL's own default max_connections is 100 (3 kept for
// superusers): 20 lets four replicas share a default server with room for
// an administrator. A query holds a connection only for its statements,
// not while it waits for its model (see [Options.MaxConns]), so 20 keeps
// up with more statements at once than a replica's CPU makes.
const DefaultMaxConns = 20

// Defaults for the PostgreSQL session, added to a URL that does not set
// them: how long connecting may take (connect_timeout, in seconds) and any
// one statement (statement_timeout, in milliseconds).
const (
	defaultConnectTimeout   = "5"
	defaultStatementTimeout = "10000"
)

// Options configures [Open]. A nil *Options means the defaults.
type Options struct {
	// Logger receives lifecycle messages (database opened, schema migrated).
	// Nil means a logger that discards everything.
	Logger *slog.Logger
	// MaxConns bounds the open PostgreSQL connections, idle or in use, at 2
	// or more; 0 means [DefaultMaxConns]. A connection is held only while
	// a call runs: a conversation lock ([Store.Lock]) is a lease that
	// holds none while its query waits for a model, so the pool follows
	// the database work, not the queries running at once. A call that
	// waits for a connection longer than its timeout fails with
	// [ErrUnavailable]. SQLite always uses one.
	MaxConns int
	// CallTimeout bounds each call whose ctx has no deadline (connecting,
	// waiting for a connection and every statement); 0 means
	// [DefaultCallTimeout]. It does not bound [Store.Lock]'s wait for a
	// conversation held elsewhere, which only its ctx ends.
	CallTimeout time.Duration
}

// Store is a handle on the database of users and conversations. It is safe
// for concurrent use by many goroutines, and by several processes on one
// PostgreSQL database. The caller owns it and must call [Store.Close].
type Store struct {
	db      *sql.DB
	dialect dialect
	logger  *slog.Logger
	// where names the database in errors and logs, without any password.
	where string
	// pgDSN is the driver's data source name on PostgreSQL, for the
	// connection of a Bus; it may hold a password: never log it.
	pgDSN string
	// callTimeout bounds a call whose ctx has no deadline (see call).
	callTimeout time.Duration

	// reads keeps the answers of the reads every query makes, on SQLite
	// (see readCache); nil on PostgreSQL.
	reads *readCache

	// group commits concurrent saves together on SQLite; nil on
	// PostgreSQL, whose saves each run a transaction of their own.
	group *groupWriter

	// locks serialises conversations in process; see Lock.
	locks keyedMutex
	// leases are the PostgreSQL conversation locks held; see Lock.
	leases leaseKeeper

	// leaseTTL, when set (by tests, before the first Lock), replaces
	// defaultLeaseTTL.
	leaseTTL time.Duration
	// clock, when set (by tests), replaces time.Now.
	clock func() time.Time
	// beforeEvent, when set (by tests), runs before event i of query
	// queryID's save is written; an error aborts the save there. On
	// SQLite it runs again for a save that is rerun (groupWriter.commit).
	beforeEvent func(queryID string, i int) error

	// failedSave is the size of the last save on SQLite when it failed
	// for lack of room or a failed write, 0 otherwise (see Ping).
	failedSave atomic.Int64

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error

	// mu guards stmts, SQLite's prepared statements by query (see
	// prepared), and orders Close.
	mu    sync.Mutex
	stmts map[string]*sql.Stmt
}

// Open connects to the database named by dsn, creates or migrates its
// schema, and returns a Store ready for use.
//
// The data source name selects the backend:
//   - "" is the SQLite file [DefaultSQLitePath], whose folder is created;
//   - "postgres://..." or "postgresql://..." is PostgreSQL (any pgx
//     connection URL, including runtime parameters such as search_path);
//   - "sqlite://PATH", a "file:" URI, or any other string without "://" is a
//     SQLite file at that path (folders are created), and ":memory:" is a
//     private in-memory database.
//
// ctx bounds connecting and migrating only; the Store outlives it. Two
// processes may open the same PostgreSQL database at once: migrations run
// under an advisory lock. A nil opts means the defaults.
func Open(ctx context.Context, dsn string, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MaxConns == 0 {
		o.MaxConns = DefaultMaxConns
	}
	if o.MaxConns < 2 {
		return nil, fmt.Errorf("at most %d database connections: want 2 or more", o.MaxConns)
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	d, driverDSN, where, err := parseDSN(dsn)
	if err != nil {
		return nil, err
	}
	s := &Store{dialect: d, logger: o.Logger.With("store", where), where: where, callTimeout: o.CallTimeout}
	if d == dialectPostgres {
		s.pgDSN = driverDSN
		// No tracer or logger that keeps a statement's arguments past the
		// call: saves lend the driver their bytes (see borrowed).
		s.db, err = sql.Open("pgx", driverDSN)
	} else {
		s.db, err = s.openSQLite(driverDSN)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", where, err)
	}
	switch d {
	case dialectPostgres:
		// Idle connections are kept up to the bound: a smaller idle pool
		// makes a busy replica open and close connections at every query.
		// Conversation locks are leases (rows), which pin no connection.
		s.db.SetMaxOpenConns(o.MaxConns)
		s.db.SetMaxIdleConns(o.MaxConns)
		s.db.SetConnMaxIdleTime(5 * time.Minute)
	default:
		// SQLite has one writer at a time, and the driver's busy handler
		// polls with growing sleeps and no queue: with a pool, hundreds of
		// concurrent saves starve each other until busy_timeout fails them
		// ("database is locked"). One connection makes them queue fairly in
		// database/sql instead; every statement here is short. (For
		// ":memory:" it is also required: each connection would be a
		// different database.)
		s.db.SetMaxOpenConns(1)
	}
	if err := s.ping(ctx); err != nil {
		_ = s.db.Close() // best effort: the ping error is the one to report
		return nil, fmt.Errorf("connect to %s: %w", where, err)
	}
	if err := s.migrate(ctx); err != nil {
		_ = s.db.Close() // best effort: the migration error is the one to report
		return nil, fmt.Errorf("migrate schema of %s: %w", where, err)
	}
	if d == dialectSQLite {
		if _, err := s.db.ExecContext(ctx, healthTable); err != nil {
			_ = s.db.Close() // best effort: the create error is the one to report
			return nil, fmt.Errorf("create health table of %s: %w", where, err)
		}
		s.group = newGroupWriter(s.db, s.logger)
	}
	s.logger.InfoContext(ctx, "store opened")
	return s, nil
}

// Close closes the database. PostgreSQL locks still held are released
// (their leases deleted); calling their unlock functions afterwards does
// nothing. Close may be called more than once and concurrently; later calls
// return the first call's result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed.Store(true)
		s.mu.Unlock()
		if s.group != nil {
			s.group.close()
		}
		s.closeLeases()
		s.closeErr = s.db.Close()
	})
	return s.closeErr
}

// check returns ErrClosed after Close, and an error when an id is empty.
func (s *Store) check(ids ...string) error {
	if s.closed.Load() {
		return ErrClosed
	}
	for _, id := range ids {
		if id == "" {
			return errors.New("empty user or conversation id")
		}
	}
	return nil
}

// q rewrites a query written with ? placeholders for the Store's dialect.
func (s *Store) q(query string) string {
	if s.dialect != dialectPostgres {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// parseDSN returns the backend, the DSN to give its driver, and a name for
// the database that is safe to log. It creates the SQLite file's folder.
func parseDSN(dsn string) (d dialect, driverDSN, where string, err error) {
	dsn = strings.TrimSpace(dsn)
	lower := strings.ToLower(dsn)
	switch {
	case strings.HasPrefix(lower, "postgres://"), strings.HasPrefix(lower, "postgresql://"):
		u, err := url.Parse(dsn)
		if err != nil {
			return 0, "", "", errors.New("invalid PostgreSQL URL") // the URL may hold a password
		}
		q := u.Query()
		if !q.Has("connect_timeout") {
			q.Set("connect_timeout", defaultConnectTimeout)
		}
		if !q.Has("statement_timeout") {
			q.Set("statement_timeout", defaultStatementTimeout)
		}
		u.RawQuery = q.Encode()
		return dialectPostgres, u.String(), "postgres://" + u.Host + u.Path, nil
	case dsn == "":
		return sqliteDSN(DefaultSQLitePath)
	case strings.HasPrefix(lower, "sqlite://"):
		return sqliteDSN(dsn[len("sqlite://"):])
	case strings.HasPrefix(lower, "sqlite:"):
		return sqliteDSN(dsn[len("sqlite:"):])
	case strings.HasPrefix(lower, "file:"):
		return sqliteURI(dsn)
	case strings.Contains(dsn, "://"):
		scheme, _, _ := strings.Cut(dsn, "://")
		return 0, "", "", fmt.Errorf("unsupported database URL scheme %q (want postgres://, sqlite:// or a file path)", scheme)
	default:
		return sqliteDSN(dsn)
	}
}

// sqliteDSN builds the driver DSN for a SQLite file path.
func sqliteDSN(path string) (dialect, string, string, error) {
	if path == "" {
		return 0, "", "", errors.New("empty SQLite path")
	}
	if path == ":memory:" {
		return dialectSQLite, "file::memory:?" + sqlitePragmas, "sqlite::memory:", nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return 0, "", "", fmt.Errorf("create folder of SQLite database: %w", err)
	}
	escaped := strings.NewReplacer("%", "%25", "?", "%3F", "#", "%23").Replace(path)
	return dialectSQLite, "file:" + escaped + "?" + sqlitePragmas, "sqlite:" + path, nil
}

// sqliteURI adds the store's pragmas to a "file:" URI, before the URI's own
// parameters so that those win, and creates the file's folder.
func sqliteURI(uri string) (dialect, string, string, error) {
	base, query, _ := strings.Cut(uri, "?")
	path := base[len("file:"):]
	if strings.HasPrefix(path, "//") { // file://host/path: only an empty or local host is valid
		rest := path[2:]
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			path = rest[i:]
		}
	}
	if p, err := url.PathUnescape(path); err == nil {
		path = p
	}
	if path != "" && path != ":memory:" && !strings.Contains(query, "mode=memory") {
		if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
			return 0, "", "", fmt.Errorf("create folder of SQLite database: %w", err)
		}
	}
	driverDSN := base + "?" + sqlitePragmas
	if query != "" {
		driverDSN += "&" + query
	}
	return dialectSQLite, driverDSN, "sqlite:" + path, nil
}
