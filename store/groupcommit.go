package store

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"
)

// maxGroup bounds the saves one SQLite transaction commits together.
const maxGroup = 64

// writeFunc writes one save inside tx. after, when not nil, runs once the
// transaction has committed (it records what the save returns to its
// caller); it must not touch the database.
type writeFunc func(ctx context.Context, tx *sql.Tx) (after func(), err error)

// groupWriter commits the saves of concurrent callers in one SQLite
// transaction ("group commit"). SQLite has one writer and this store one
// connection, so concurrent saves queue anyway; a commit writes the changed
// pages to the WAL, checksums them and syncs, which was 60 % of a save's
// CPU under load. The writer takes a save, then every save already waiting
// (up to maxGroup), and runs each in a savepoint of one transaction: a save
// that fails rolls back to its savepoint alone, and the others commit.
// Nothing waits for company: a save that finds no other commits alone, as
// before.
//
// A save's ctx is honoured until the writer takes it; from then on it runs
// to the end (SQLite's interrupt would roll back the whole transaction, the
// other callers' saves with it), so a caller learns whether its save
// committed. Each caller gets its own save's result, or the commit's error.
type groupWriter struct {
	db   *sql.DB
	jobs chan *writeJob // unbuffered: a send succeeds only when the writer takes it
	quit chan struct{}
	done chan struct{}
	stop sync.Once

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
}

func newGroupWriter(db *sql.DB) *groupWriter {
	w := &groupWriter{db: db, jobs: make(chan *writeJob), quit: make(chan struct{}), done: make(chan struct{})}
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
func (w *groupWriter) commit(group []*writeJob) {
	defer func() {
		for _, j := range group {
			close(j.done)
		}
	}()
	// The transaction outlives any one caller's ctx (see groupWriter), and
	// SQLite on a local file needs no deadline of its own.
	ctx := context.WithoutCancel(group[0].ctx)
	tx, err := w.db.BeginTx(ctx, nil)
	if err != nil {
		failAll(group, err)
		return
	}
	wrote := false
	for _, j := range group {
		if j.err = j.ctx.Err(); j.err != nil {
			continue
		}
		if err := w.savepoint(ctx, tx, j); err != nil {
			// The transaction itself is broken: nothing in it can commit.
			_ = tx.Rollback() // the savepoint's error is the one to report
			failAll(group, err)
			return
		}
		wrote = wrote || j.err == nil
	}
	if !wrote {
		_ = tx.Rollback() // nothing to keep; a rollback error changes nothing
		return
	}
	if err := tx.Commit(); err != nil {
		failAll(group, err)
		return
	}
	w.commits.Add(1)
}

// savepoint runs j in a savepoint of tx, setting j.err to j's own error
// (after rolling its writes back). It returns an error only when tx can no
// longer be used.
func (w *groupWriter) savepoint(ctx context.Context, tx *sql.Tx, j *writeJob) error {
	if _, err := tx.ExecContext(ctx, `SAVEPOINT save`); err != nil {
		return err
	}
	j.after, j.err = j.write(context.WithoutCancel(j.ctx), tx)
	if j.err != nil {
		j.after = nil
		if _, err := tx.ExecContext(ctx, `ROLLBACK TO save`); err != nil {
			return err
		}
	}
	_, err := tx.ExecContext(ctx, `RELEASE save`)
	return err
}

// failAll gives every job of group err, unless it already failed on its own.
func failAll(group []*writeJob, err error) {
	for _, j := range group {
		if j.err == nil {
			j.err, j.after = err, nil
		}
	}
}
