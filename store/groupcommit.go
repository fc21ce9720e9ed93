package store

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// maxGroup bounds the saves one SQLite transaction commits together.
const maxGroup = 64

// writeFunc writes one save inside tx. after, when not nil, runs once the
// transaction has committed (it records what the save returns to its
// caller); it must not touch the database. A writeFunc may run more than
// once: again in a new transaction when another save in its transaction
// failed (see groupWriter.commit); only the last run's after runs.
type writeFunc func(ctx context.Context, tx *sql.Tx) (after func(), err error)

// groupWriter commits the saves of concurrent callers in one SQLite
// transaction ("group commit"). SQLite has one writer and this store one
// connection, so concurrent saves queue anyway; a commit writes the changed
// pages to the WAL, checksums them and syncs, which was 60 % of a save's
// CPU under load. The writer takes a save, then every save already waiting
// (up to maxGroup), and runs them in one transaction; a save that fails
// fails alone (see commit). Nothing waits for company: a save that finds
// no other commits alone, as before.
//
// A save's ctx is honoured until its turn in a transaction comes; from
// then on it runs to the end, in a rerun too (SQLite's interrupt would roll
// back the whole transaction, the other callers' saves with it), so a
// caller learns whether its save committed. Each caller gets its own save's result, or
// the commit's error.
type groupWriter struct {
	db     *sql.DB
	logger *slog.Logger
	jobs   chan *writeJob // unbuffered: a send succeeds only when the writer takes it
	quit   chan struct{}
	done   chan struct{}
	stop   sync.Once

	// shrink is set, on the writer's goroutine only, when a write failed
	// for lack of room or a failed write: the write-ahead log is to be
	// truncated before the next transaction (see shrinkWAL).
	shrink bool

	// queued counts the saves waiting for the writer to take them, and
	// commits the transactions committed; for tests.
	queued  atomic.Int64
	commits atomic.Int64
}

type writeJob struct {
	ctx   context.Context //nolint:containedctx // the caller's, carried to the writer goroutine
	write writeFunc
	after func()
	err   error
	done  chan struct{}
	// started is set once the save's write has begun: from then on its
	// ctx no longer counts, in a rerun too. panicked holds what the write
	// panicked with, which do panics with again in the caller.
	started  bool
	panicked any
}

func newGroupWriter(db *sql.DB, logger *slog.Logger) *groupWriter {
	w := &groupWriter{db: db, logger: logger, jobs: make(chan *writeJob), quit: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	return w
}

// do runs write in the writer's next transaction and returns its error or
// the commit's; after write's after func, if any, has run. It returns
// ctx's error, having written nothing, if ctx ends before the writer takes
// the save, and ErrClosed once the writer is stopped.
func (w *groupWriter) do(ctx context.Context, write writeFunc) error {
	j := &writeJob{ctx: ctx, write: write, done: make(chan struct{})}
	w.queued.Add(1)
	select {
	case w.jobs <- j:
		w.queued.Add(-1)
	case <-ctx.Done():
		w.queued.Add(-1)
		return ctx.Err()
	case <-w.quit:
		w.queued.Add(-1)
		return ErrClosed
	}
	<-j.done // bounded by the transaction the writer is running
	if j.panicked != nil {
		panic(j.panicked)
	}
	if j.err == nil && j.after != nil {
		j.after()
	}
	return j.err
}

// close stops the writer after the transaction it is running, if any. Saves
// not taken by then get ErrClosed.
func (w *groupWriter) close() {
	w.stop.Do(func() { close(w.quit) })
	<-w.done
}

func (w *groupWriter) run() {
	defer close(w.done)
	group := make([]*writeJob, 0, maxGroup)
	for {
		select {
		case <-w.quit: // taken first: once closing, no save is taken
			return
		default:
		}
		select {
		case j := <-w.jobs:
			group = append(group[:0], j)
		case <-w.quit:
			return
		}
	waiting:
		for len(group) < maxGroup {
			select {
			case j := <-w.jobs:
				group = append(group, j)
			default:
				break waiting
			}
		}
		w.commit(group)
		clear(group)
	}
}

// commit runs group in one transaction and tells each job its result.
// When a save fails, the transaction is rolled back, that save keeps its
// error (as it would have had committing after the saves before it), and
// the others run again together; each round drops a save, so a group of n
// runs at most n rounds. Savepoints would spare the rerun, but they cost
// every save a journal of the pages it changes, and saves rarely fail.
func (w *groupWriter) commit(group []*writeJob) {
	defer func() {
		for _, j := range group {
			close(j.done)
		}
	}()
	rest := slices.Clone(group)
	for len(rest) > 0 {
		failed, err := w.try(rest)
		if failed < 0 {
			if err != nil {
				failAll(rest, err)
			}
			return
		}
		rest = slices.Delete(rest, failed, failed+1)
	}
}

// try runs rest in one transaction and commits it. It returns the index
// of the save that failed on its own (or panicked), having rolled the
// transaction back, or -1 and the error that failed them all (nil once
// committed). A save whose caller gave up before it started is skipped
// with its ctx's error.
func (w *groupWriter) try(rest []*writeJob) (failed int, err error) {
	// The transaction outlives any one caller's ctx (see groupWriter), and
	// SQLite on a local file needs no deadline of its own.
	ctx := context.WithoutCancel(rest[0].ctx)
	if w.shrink {
		w.shrink = !w.shrinkWAL(ctx)
	}
	tx, err := w.db.BeginTx(ctx, nil)
	if err != nil {
		w.shrink = w.shrink || cannotWrite(err)
		return -1, err
	}
	wrote := false
	for i, j := range rest {
		j.after = nil
		if !j.started {
			if j.err = j.ctx.Err(); j.err != nil {
				continue
			}
			j.started = true
		}
		if j.after, j.err = j.run(tx); j.err != nil {
			j.after = nil
			w.shrink = w.shrink || cannotWrite(j.err)
			// A failed rollback means SQLite has already rolled back (after
			// SQLITE_FULL, say); a broken connection fails the next round's
			// BeginTx, for everyone.
			_ = tx.Rollback()
			return i, nil
		}
		wrote = true
	}
	if !wrote {
		return -1, tx.Rollback()
	}
	if err := tx.Commit(); err != nil {
		w.shrink = w.shrink || cannotWrite(err)
		return -1, err
	}
	w.commits.Add(1)
	return -1, nil
}

// shrinkWALTimeout bounds the checkpoint of shrinkWAL, which waits for
// other processes' readers and writer on the same file at most that long.
const shrinkWALTimeout = 5 * time.Second

// shrinkWAL copies the write-ahead log into the database and truncates it
// to nothing, best effort, and reports whether it did. After a write failed
// for lack of room (a full disk) or a failed write, the writer runs it
// before each transaction until it succeeds, so that the next writes find
// room: the log holds every version of every page written since the last
// checkpoint, many times what the database needs, and never shrinks by
// itself. Without it, once space was freed on a full disk, the saves that
// followed took the freed space for the log and failed again within a few
// (TestFullDiskRecovers). While the disk stays full the checkpoint fails
// (it must grow the database first), and the next transaction tries again.
func (w *groupWriter) shrinkWAL(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, shrinkWALTimeout)
	defer cancel()
	var busy, logged, copied int64
	err := w.db.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logged, &copied)
	switch {
	case err != nil:
		w.logger.DebugContext(ctx, "write-ahead log not truncated after a failed write", logKeyErr, err)
		return false
	case busy != 0:
		w.logger.DebugContext(ctx, "write-ahead log not truncated after a failed write: another connection uses it",
			"log_frames", logged, "copied_frames", copied)
		return false
	}
	w.logger.InfoContext(ctx, "write-ahead log truncated after a failed write", "log_frames", logged)
	return true
}

// run runs j's write in tx. A panic becomes j's error here and is raised
// again in the caller (see do), as it was before saves had a writer.
func (j *writeJob) run(tx *sql.Tx) (after func(), err error) {
	defer func() {
		if p := recover(); p != nil {
			j.panicked = p
			after, err = nil, fmt.Errorf("save panicked: %v", p)
		}
	}()
	return j.write(context.WithoutCancel(j.ctx), tx)
}

// failAll gives every job of group err, unless it already failed on its own.
func failAll(group []*writeJob, err error) {
	for _, j := range group {
		if j.err == nil {
			j.err, j.after = err, nil
		}
	}
}
