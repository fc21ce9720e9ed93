package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// MaxBusMessage is the largest message a [Bus] carries: [Bus.Publish]
// refuses a larger one.
const MaxBusMessage = 4 << 20

// maxBusQueue bounds the messages waiting to be sent while the database is
// slow or out of reach: [Bus.Publish] refuses more.
const maxBusQueue = 1024

// How long a message stays in the database for the other processes to
// read, and how often each process deletes older ones.
const (
	busRetention  = time.Minute
	busPruneEvery = 30 * time.Second
)

// The bounds of the wait before connecting again after the bus's
// connection failed or dropped; it doubles from the first to the second.
const (
	busMinBackoff = 100 * time.Millisecond
	busMaxBackoff = 5 * time.Second
)

// Bus carries messages between the processes that share a PostgreSQL
// database (the replicas of one service), through PostgreSQL itself: a
// message is a row of the relay_messages table, and a NOTIFY on a channel
// of the Store's schema tells the others its id. NOTIFY carries only that
// id and the sender's random instance id, never the message: any role
// that may connect to the database may LISTEN on any channel (channels
// have no privileges), and a payload is limited to 8000 bytes, while the
// table's rows are guarded by the table's grants and may be as large as
// [MaxBusMessage]. A row is kept for a minute (the time every process has
// to read it), then deleted.
//
// A Bus holds one connection of its own, beside the Store's pool and not
// counted in [Options.MaxConns], which it opens again, with a back-off of
// up to 5 s, when it fails or drops. Delivery is at most once and
// best-effort: messages sent while a process is not listening are lost to
// it (it is told, see [Bus.Start]), so every wait for an answer must be
// bounded.
//
// Use [Store.NewBus], then Start; Close ends it. Its methods are safe for
// concurrent use.
type Bus struct {
	s        *Store
	logger   *slog.Logger
	instance string
	done     chan struct{}
	// listening is set while the connection listens.
	listening atomic.Bool
	// beforeDeliver, when set (by tests, before Start), runs on the Bus's
	// goroutine before each delivery.
	beforeDeliver func()

	// mu guards cancel (the lifetime of the Bus's goroutine: set by
	// Start, called by Close), queue (the messages not yet sent),
	// interrupt (the cancel of the goroutine's current wait for a
	// notification, which a new message cuts short), started and closed.
	mu        sync.Mutex
	cancel    context.CancelFunc
	queue     [][]byte
	interrupt context.CancelFunc
	started   bool
	closed    bool
}

// NewBus returns a Bus over the Store's PostgreSQL database. On SQLite,
// which one process uses, the error matches [ErrNoBus]. It does no I/O.
func (s *Store) NewBus() (*Bus, error) {
	if s.dialect != dialectPostgres {
		return nil, ErrNoBus
	}
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails
	id := hex.EncodeToString(b[:])
	return &Bus{s: s, logger: s.logger.With("bus", id), instance: id, done: make(chan struct{})}, nil
}

// Start connects the Bus and calls deliver with each message another
// process publishes, in the order it learns of them, on the Bus's own
// goroutine until Close: deliver must not block, and owns the message.
// After the connection was lost and made again, deliver gets a nil
// message first: messages sent in between were missed. Once Close has
// begun deliver is not called again, and Close returns only once a call
// in progress has returned: a receiver that closes after the Bus gets no
// message after its own Close. Start returns at once; it fails when
// called a second time or after Close.
func (b *Bus) Start(deliver func(msg []byte)) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.closed:
		return ErrClosed
	case b.started:
		return errors.New("bus already started")
	}
	b.started = true
	// The lifetime ctx of the Bus's goroutine, cancelled by Close.
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	go b.run(ctx, deliver)
	return nil
}

// Publish queues msg for every other process on the database and returns
// at once; the Bus's goroutine sends it. It refuses a message larger than
// [MaxBusMessage], one that finds 1024 messages waiting (the database is
// out of reach), and any after Close. A message the same as one still
// waiting is sent once. The caller may reuse msg.
func (b *Bus) Publish(msg []byte) error {
	if len(msg) > MaxBusMessage {
		return fmt.Errorf("bus message of %d bytes: at most %d", len(msg), MaxBusMessage)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return ErrClosed
	}
	for _, q := range b.queue {
		if string(q) == string(msg) {
			return nil
		}
	}
	if len(b.queue) >= maxBusQueue {
		return fmt.Errorf("bus of %s: %d messages wait to be sent already", b.s.where, maxBusQueue)
	}
	b.queue = append(b.queue, append([]byte(nil), msg...))
	if b.interrupt != nil {
		b.interrupt()
	}
	return nil
}

// Listening reports whether the Bus hears the other processes now: it is
// connected and listens (not before Start, nor while it connects again).
func (b *Bus) Listening() bool { return b.listening.Load() }

// Close ends the Bus's goroutine and its connection, and waits for them
// and for a delivery in progress; messages still queued, and any read but
// not yet delivered, are dropped. It may be called more than once and
// concurrently.
func (b *Bus) Close() error {
	b.mu.Lock()
	b.closed = true
	started, cancel := b.started, b.cancel
	b.queue = nil
	b.mu.Unlock()
	if started {
		cancel()
		<-b.done
	}
	return nil
}

// run connects, serves, and connects again after a back-off, until ctx
// ends.
func (b *Bus) run(ctx context.Context, deliver func([]byte)) {
	defer close(b.done)
	backoff := busMinBackoff
	lost := false
	for {
		conn, err := b.connect(ctx)
		if err == nil {
			err = b.serve(ctx, conn, deliver, lost, func() { backoff = busMinBackoff })
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			_ = conn.Close(cctx) // the session may be gone already; it ends either way
			cancel()
		}
		if ctx.Err() != nil {
			return
		}
		lost = true
		b.logger.Warn("bus connection failed; connecting again", slog.Duration("backoff", backoff), slog.Any(logKeyErr, err))
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, busMaxBackoff)
	}
}

// connect opens the Bus's connection; the data source name's
// connect_timeout bounds it.
func (b *Bus) connect(ctx context.Context) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(b.s.pgDSN)
	if err != nil {
		return nil, errors.New("invalid PostgreSQL URL") // the URL may hold a password
	}
	cfg.RuntimeParams["application_name"] = "elysia bus " + b.instance
	return pgx.ConnectConfig(ctx, cfg)
}

// serve listens on conn until it fails or ctx ends: it sends the queued
// messages, delivers the others' and prunes old rows. healthy is called
// once the connection listens.
func (b *Bus) serve(ctx context.Context, conn *pgx.Conn, deliver func([]byte), lost bool, healthy func()) error {
	var schema string
	if err := b.exec(ctx, func(ctx context.Context) error {
		return conn.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema)
	}); err != nil {
		return fmt.Errorf("read current schema: %w", err)
	}
	channel := busChannel(schema)
	if err := b.exec(ctx, func(ctx context.Context) error {
		_, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize())
		return err
	}); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	healthy()
	b.listening.Store(true)
	defer b.listening.Store(false)
	if lost {
		b.hand(deliver, nil)
	}
	nextPrune := time.Now()
	for {
		if err := b.flush(ctx, conn, channel); err != nil {
			return err
		}
		if now := time.Now(); !now.Before(nextPrune) {
			if err := b.prune(ctx, conn, now); err != nil {
				return err
			}
			nextPrune = now.Add(busPruneEvery)
		}
		wctx, cancel := context.WithDeadline(ctx, nextPrune)
		b.mu.Lock()
		if len(b.queue) > 0 {
			b.mu.Unlock()
			cancel()
			continue
		}
		b.interrupt = cancel
		b.mu.Unlock()
		n, err := conn.WaitForNotification(wctx)
		b.mu.Lock()
		b.interrupt = nil
		b.mu.Unlock()
		woken := wctx.Err() != nil
		cancel()
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil && woken && !conn.IsClosed():
			continue // a message to send, or time to prune
		case err != nil:
			return fmt.Errorf("wait for notifications: %w", err)
		}
		if err := b.receive(ctx, conn, channel, n.Channel, n.Payload, deliver); err != nil {
			return err
		}
	}
}

// flush sends the queued messages on conn. A message the database refuses
// while the connection stays up is dropped (and logged); when the
// connection fails, the messages not sent stay queued.
func (b *Bus) flush(ctx context.Context, conn *pgx.Conn, channel string) error {
	for {
		b.mu.Lock()
		if len(b.queue) == 0 {
			b.mu.Unlock()
			return nil
		}
		msg := b.queue[0]
		b.mu.Unlock()
		err := b.exec(ctx, func(ctx context.Context) error {
			_, err := conn.Exec(ctx, `WITH m AS (INSERT INTO relay_messages (sent_at, body) VALUES ($1, $2) RETURNING id)
				SELECT pg_notify($3::text, $4::text || ' ' || m.id::text) FROM m`,
				time.Now().UnixMicro(), msg, channel, b.instance)
			return err
		})
		if err != nil && conn.IsClosed() {
			return fmt.Errorf("send a message: %w", err)
		}
		if err != nil {
			b.logger.Warn("bus message dropped: the database refused it", slog.Int("bytes", len(msg)), slog.Any(logKeyErr, err))
		}
		b.mu.Lock()
		if len(b.queue) > 0 { // Close may have emptied it
			b.queue = b.queue[1:]
		}
		b.mu.Unlock()
	}
}

// receive reads the message a notification names and delivers it, unless
// it is this Bus's own or not of its channel.
func (b *Bus) receive(ctx context.Context, conn *pgx.Conn, channel, got, payload string, deliver func([]byte)) error {
	sender, idText, ok := strings.Cut(payload, " ")
	if got != channel || !ok || sender == b.instance {
		return nil
	}
	id, err := strconv.ParseInt(idText, 10, 64)
	if err != nil {
		return nil
	}
	var body []byte
	err = b.exec(ctx, func(ctx context.Context) error {
		return conn.QueryRow(ctx, `SELECT body FROM relay_messages WHERE id = $1`, id).Scan(&body)
	})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil // pruned already: the message came too late to matter
	case err != nil && conn.IsClosed():
		return fmt.Errorf("read message %d: %w", id, err)
	case err != nil:
		b.logger.Warn("bus message not read", slog.Int64("id", id), slog.Any(logKeyErr, err))
		return nil
	case len(body) > MaxBusMessage:
		return nil
	}
	b.hand(deliver, body)
	return nil
}

// hand calls deliver with msg, on the Bus's goroutine, unless Close has
// begun: from then on nothing is delivered, so that a receiver whose own
// Close follows the Bus's is handed no message, and starts no work for
// one, after it (a delivery that had begun then is one Close waits for).
func (b *Bus) hand(deliver func([]byte), msg []byte) {
	if b.beforeDeliver != nil {
		b.beforeDeliver()
	}
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if !closed {
		deliver(msg)
	}
}

// prune deletes the messages older than busRetention.
func (b *Bus) prune(ctx context.Context, conn *pgx.Conn, now time.Time) error {
	err := b.exec(ctx, func(ctx context.Context) error {
		_, err := conn.Exec(ctx, `DELETE FROM relay_messages WHERE sent_at < $1`, now.Add(-busRetention).UnixMicro())
		return err
	})
	if err != nil && conn.IsClosed() {
		return fmt.Errorf("prune messages: %w", err)
	}
	if err != nil {
		b.logger.Warn("bus messages not pruned", slog.Any(logKeyErr, err))
	}
	return nil
}

// exec runs f with ctx bounded by the Store's call timeout.
func (b *Bus) exec(ctx context.Context, f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, b.s.callTimeout)
	defer cancel()
	return f(ctx)
}

// busChannel is the NOTIFY channel of the Bus of a schema: channels are
// shared by a database's schemas, and each schema (one service) has its
// own messages.
func busChannel(schema string) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(schema)) // never fails
	return fmt.Sprintf("elysia_bus_%016x", h.Sum64())
}
