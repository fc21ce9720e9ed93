package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
)

// Turn is what one save of a query added to a conversation: the history
// messages and the results it found. A conversation's turns, in order, are
// its whole history and environment. The JSON blobs belong to the tree
// layer; the store keeps them byte for byte.
type Turn struct {
	// Seq numbers the turns of a conversation from 1; set by the store.
	Seq int64
	// QueryID is the query that made the turn, "" for one that was not
	// made by a query (a whole conversation saved at once, or one moved
	// from the first schema). Clients choose query ids, and may reuse
	// them: it keys nothing.
	QueryID string
	// Key names the save that writes the turn, the same for every retry
	// of it, or "" (not keyed). A conversation holds at most one turn of
	// each key (a unique index), and a save whose key is saved already
	// writes nothing (see [Store.SaveQuery]). The store never reads it
	// back.
	Key string
	// Messages are the history messages the turn added: a JSON array.
	Messages json.RawMessage
	// Results are the results the turn added, whole; nil when there are
	// none, and once trimmed: a later turn with results trims the earlier
	// ones' to their Digests.
	Results json.RawMessage
	// Digests are the Results in a short form that the store keeps once
	// they are trimmed; nil: the Results are kept whole (a turn moved from
	// the first schema keeps them until [Store.SetDigests] gives some).
	Digests json.RawMessage
	// Encoded says that the caller made Messages, Results and Digests
	// with encoding/json itself, so that they are JSON: the save does not
	// scan them again. Otherwise each is checked, and one that is not JSON
	// fails the save.
	Encoded bool
}

// NewEvent is an event to append to a conversation's event log.
type NewEvent struct {
	// Envelope is the event as it was sent on the wire.
	Envelope json.RawMessage
	// Digest, when not nil, is the short form that replaces Envelope once a
	// later query of the conversation saves its events, so that the log
	// keeps only the newest query's large results whole.
	Digest json.RawMessage
	// Encoded says that the caller made Envelope and Digest with
	// encoding/json itself (an envelope's payload included), so that they
	// are JSON: the save does not scan them again. Otherwise both are
	// checked, and an event that is not JSON fails the save.
	Encoded bool
}

// The statements of a save; see Store.save.
const (
	insertUser = `INSERT INTO users (id, created_at) VALUES (?, ?) ON CONFLICT (id) DO NOTHING`
	// trimTurns reads only the turns still whole (a partial index), so its
	// cost does not grow with the conversation; trimEvents likewise.
	trimTurns = `UPDATE turns SET results = NULL
		WHERE user_id = ? AND conversation_id = ? AND results IS NOT NULL AND digests IS NOT NULL AND seq < ?`
	// insertTurn writes nothing when the turn's key is saved already:
	// see errTurnSaved.
	insertTurn = `INSERT INTO turns (user_id, conversation_id, seq, query_id, save_key, messages, results, digests)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (user_id, conversation_id, save_key) WHERE save_key <> '' DO NOTHING`
	// selectSavedTurn finds the turn a save wrote, and the conversation's
	// row as it is now, for a save retried once it had committed. It
	// repeats the unique index's condition (save_key <> ''), without which
	// neither database uses a partial index: every save would read all the
	// conversation's turns.
	selectSavedTurn = `SELECT t.seq, c.created_at, c.updated_at, c.version, c.turns
		FROM turns t JOIN conversations c ON c.user_id = t.user_id AND c.id = t.conversation_id
		WHERE t.user_id = ? AND t.conversation_id = ? AND t.save_key = ? AND t.save_key <> ''`
	trimEvents = `UPDATE events SET envelope = digest, digest = NULL
		WHERE user_id = ? AND conversation_id = ? AND digest IS NOT NULL AND query_id <> ?`
	// trimPackedEvents is trimEvents for the rows of a query's events
	// (see pack and packedEventsMigration): a replica from before trims
	// only their last event, with trimEvents.
	trimPackedEvents = `UPDATE events SET envelopes = digests, digests = NULL
		WHERE user_id = ? AND conversation_id = ? AND digests IS NOT NULL AND query_id <> ?`
	// insertEvents writes a query's events in one row: see pack.
	insertEvents = `INSERT INTO events (user_id, conversation_id, query_id, envelope, digest, envelopes, digests)
		VALUES (?, ?, ?, ?, ?, ?, ?)`
)

// SaveConversation creates the conversation c (and its user) or, when it
// exists, updates the parts the tree API changes: InitMode, TreeOps and
// UpdatedAt. Title is written only when the conversation is created;
// queries update it with [Store.SaveQuery]. (A replica holding an older
// copy of the conversation must not blank the title a query set elsewhere.)
func (s *Store) SaveConversation(ctx context.Context, c *Conversation) error {
	return s.save(ctx, c, saveConversationSet, nil, "", nil)
}

// SaveQuery saves what one query did, in one transaction: it creates the
// conversation c (and its user) or updates its Title and UpdatedAt; appends
// turn, when not nil, as the conversation's next turn (setting its Seq);
// and appends events, in order, to the conversation's event log under
// queryID. Either all of it is saved or none of it is. A turn with Results
// trims the earlier turns' to their Digests, and events trim the earlier
// queries' events to theirs: what the conversation stores stays bounded by
// its newest query's results plus the digests of the others. Each blob must
// be JSON.
//
// A save is keyed by its turn's [Turn.Key]: when the conversation
// holds a turn of that key already, SaveQuery writes nothing and
// succeeds, setting c and turn as that save left them (c's UpdatedAt to
// the stored one, its Version and Turns to the conversation's now). So a
// caller that was told a save failed, though its commit went through (a
// connection lost, or a deadline passed, during the commit), may save the
// same turn again, with the same Key: it is never written twice. A retry
// must carry all the first attempt did (its events too): what it adds is
// dropped with it. A turn without a Key, and a nil turn, are not keyed.
//
// Concurrent SaveQuery calls on one conversation are safe but their turns
// and events may interleave; callers serialise a conversation's queries
// with [Store.Lock].
func (s *Store) SaveQuery(ctx context.Context, c *Conversation, turn *Turn, queryID string, events []NewEvent) error {
	if err := checkEvents(queryID, events); err != nil {
		return err
	}
	return s.save(ctx, c, saveQuerySet, turn, queryID, events)
}

// ReplaceConversation writes every column of the conversation c (creating
// it and its user when needed) and replaces all its turns with turn (none
// when nil), then appends events as [Store.SaveQuery] does, in one
// transaction. It is not keyed: it writes whatever the turn's Key.
func (s *Store) ReplaceConversation(ctx context.Context, c *Conversation, turn *Turn, queryID string, events []NewEvent) error {
	if err := checkEvents(queryID, events); err != nil {
		return err
	}
	return s.save(ctx, c, replaceSet, turn, queryID, events)
}

func checkEvents(queryID string, events []NewEvent) error {
	for i, e := range events {
		if e.Encoded && len(e.Envelope) > 0 {
			continue
		}
		if len(e.Envelope) == 0 || !json.Valid(e.Envelope) {
			return fmt.Errorf("save query %q: event %d is not valid JSON", queryID, i)
		}
		if len(e.Digest) > 0 && !json.Valid(e.Digest) {
			return fmt.Errorf("save query %q: the digest of event %d is not valid JSON", queryID, i)
		}
	}
	return nil
}

// save upserts c with the given SET clause, appends turn and events, and
// trims what they make old, in one transaction. set is one of the *Set
// constants; replaceSet also deletes the conversation's turns first.
func (s *Store) save(ctx context.Context, c *Conversation, set string, turn *Turn, queryID string, events []NewEvent) (err error) {
	ctx, end := s.call(ctx)
	defer end(&err)
	if c == nil {
		return errors.New("save conversation: nil conversation")
	}
	if err := s.check(c.UserID, c.ID); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			err = fmt.Errorf("save conversation %q of user %q: %w", c.ID, c.UserID, err)
		}
	}()
	if err := validJSON("tree ops", c.TreeOps); err != nil {
		return err
	}
	if turn != nil {
		if len(turn.Messages) == 0 {
			turn.Messages = json.RawMessage("[]")
		}
		for _, f := range []struct {
			name string
			b    json.RawMessage
		}{{"messages", turn.Messages}, {"results", turn.Results}, {"digests", turn.Digests}} {
			if turn.Encoded {
				break
			}
			if err := validJSON(f.name, f.b); err != nil {
				return err
			}
		}
	}
	t := s.now()
	created := c.CreatedAt
	if created.IsZero() {
		created = t
	}
	added := int64(0)
	if turn != nil {
		added = 1
	}

	keyed := turn != nil && turn.Key != "" && set != replaceSet
	s.prepare(ctx, insertUser, upsertConversation+set, trimTurns, insertTurn, trimEvents, trimPackedEvents, insertEvents, selectSavedTurn)
	// A keyed save looks for its turn first on PostgreSQL, before the
	// lease's check: a save that committed is saved, whoever holds the
	// conversation now. SQLite has no lease: the turn's unique key finds a
	// save that committed (errTurnSaved), and the save looks then.
	lookFirst := keyed && s.dialect == dialectPostgres
	epoch := s.reads.begun()
	write := func(ctx context.Context, tx *sql.Tx) (func(), error) {
		if lookFirst {
			if after, saved, err := s.savedTurn(ctx, tx, c, turn); saved || err != nil {
				return after, err
			}
		}
		if err := s.fenceLease(ctx, tx, c.UserID, c.ID); err != nil {
			return nil, err
		}
		if _, err := s.txExec(ctx, tx, insertUser,
			c.UserID, t.UnixMicro()); err != nil {
			return nil, err
		}
		if set == replaceSet {
			if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM turns WHERE user_id = ? AND conversation_id = ?`), c.UserID, c.ID); err != nil {
				return nil, err
			}
		}
		var stored, version, turns int64
		if err := s.txQueryRow(ctx, tx, upsertConversation+set,
			c.UserID, c.ID, c.Title, c.InitMode, nullJSON(c.TreeOps), created.UnixMicro(), t.UnixMicro(), added).
			Scan(&stored, &version, &turns); err != nil {
			return nil, err
		}
		// A conversation this transaction created (version 1) has no earlier
		// turns or events to trim: its rows went with any earlier delete.
		fresh := version == 1
		if turn != nil {
			if err := s.appendTurn(ctx, tx, c, turn, turns, fresh); err != nil {
				return nil, err
			}
		}
		if err := s.appendEvents(ctx, tx, c, queryID, events, fresh); err != nil {
			return nil, err
		}
		return func() {
			c.CreatedAt, c.UpdatedAt, c.Version, c.Turns = fromMicros(stored), t, version, turns
			if turn != nil {
				turn.Seq = turns
			}
			s.reads.saved(epoch, convRef{c.UserID, c.ID}, version)
		}, nil
	}
	err = s.write(ctx, s.db, write)
	if errors.Is(err, errTurnSaved) || (keyed && !lookFirst && cannotWrite(err)) {
		// Rolled back: the turn's query was saved already (on PostgreSQL by
		// a transaction that committed after this one looked: a retry that
		// overlapped the save it retries). Looking again finds it. So it
		// does for a retry that could not write (a full disk), which a save
		// that committed needs not.
		lookFirst = true
		err = s.write(ctx, s.db, write)
	}
	if err != nil {
		// It may have committed all the same (a commit whose answer was lost).
		s.reads.forgetConversation(convRef{c.UserID, c.ID})
	}
	s.noteSave(saveSize(c, turn, events), err)
	return err
}

// errTurnSaved fails the transaction of a save whose turn was saved by
// another transaction meanwhile: the unique key refused it (see
// insertTurn). The save runs again, and finds it saved.
var errTurnSaved = errors.New("the turn was saved by a concurrent save")

// savedTurn reports whether the conversation c holds the turn of turn's
// Key already and, when it does, returns the func that sets c and turn as
// [Store.SaveQuery] does for a save that writes nothing.
func (s *Store) savedTurn(ctx context.Context, tx *sql.Tx, c *Conversation, turn *Turn) (after func(), saved bool, err error) {
	var seq, created, updated, version, turns int64
	err = s.txQueryRow(ctx, tx, selectSavedTurn, c.UserID, c.ID, turn.Key).Scan(&seq, &created, &updated, &version, &turns)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("look for the turn of query %q saved already: %w", turn.QueryID, err)
	}
	return func() {
		c.CreatedAt, c.UpdatedAt, c.Version, c.Turns = fromMicros(created), fromMicros(updated), version, turns
		turn.Seq = seq
	}, true, nil
}

// saveSize is about how many bytes a save writes.
func saveSize(c *Conversation, turn *Turn, events []NewEvent) int {
	n := len(c.Title) + len(c.TreeOps)
	if turn != nil {
		n += len(turn.Messages) + len(turn.Results) + len(turn.Digests)
	}
	for _, e := range events {
		n += len(e.Envelope) + len(e.Digest)
	}
	return n
}

// write runs w in a transaction of its own on db, or on SQLite in the group
// writer's next one, and runs the func it returns once committed.
func (s *Store) write(ctx context.Context, db dbtx, w writeFunc) error {
	if s.group != nil {
		return s.group.do(ctx, w)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }() // sql.ErrTxDone after Commit
	after, err := w(ctx, tx)
	if err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	if after != nil {
		after()
	}
	return nil
}

// appendTurn inserts turn as turn seq of c and, when it has results and c
// is not fresh (just created), trims the earlier turns' results to their
// digests.
func (s *Store) appendTurn(ctx context.Context, tx *sql.Tx, c *Conversation, turn *Turn, seq int64, fresh bool) error {
	if len(turn.Results) > 0 && !fresh {
		if _, err := s.txExec(ctx, tx, trimTurns, c.UserID, c.ID, seq); err != nil {
			return fmt.Errorf("trim earlier turns: %w", err)
		}
	}
	res, err := s.txExec(ctx, tx, insertTurn, c.UserID, c.ID, seq, turn.QueryID, turn.Key, borrowed(turn.Messages), nullJSON(turn.Results), nullJSON(turn.Digests))
	if err != nil {
		return fmt.Errorf("turn %d: %w", seq, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("turn %d: %w", seq, err)
	}
	if n == 0 {
		return errTurnSaved
	}
	return nil
}

// appendEvents trims the earlier queries' events to their digests (unless
// c is fresh, just created), then inserts events under queryID, in one row
// (see pack).
func (s *Store) appendEvents(ctx context.Context, tx *sql.Tx, c *Conversation, queryID string, events []NewEvent, fresh bool) error {
	if len(events) == 0 {
		return nil
	}
	if !fresh {
		for _, trim := range []string{trimEvents, trimPackedEvents} {
			if _, err := s.txExec(ctx, tx, trim, c.UserID, c.ID, queryID); err != nil {
				return fmt.Errorf("trim earlier events: %w", err)
			}
		}
	}
	p := packs.Get().(*pack)
	defer p.release()
	if err := p.events(queryID, events, s.beforeEvent); err != nil {
		return err
	}
	last := events[len(events)-1]
	if _, err := s.txExec(ctx, tx, insertEvents, c.UserID, c.ID, queryID, borrowed(last.Envelope), nullJSON(last.Digest),
		borrowed(p.envelopes), nullJSON(p.trimmed())); err != nil {
		return fmt.Errorf("%d events: %w", len(events), err)
	}
	return nil
}

// Turns returns the turns of the conversation convID of userID, oldest
// first, or [ErrNotFound] when the conversation does not exist. A
// conversation without turns has an empty, non-nil list.
func (s *Store) Turns(ctx context.Context, userID, convID string) (_ []Turn, err error) {
	ctx, end := s.call(ctx)
	defer end(&err)
	if err := s.check(userID, convID); err != nil {
		return nil, err
	}
	db := s.db
	rows, err := db.QueryContext(ctx, s.q(`SELECT seq, query_id, messages, results, digests FROM turns
		WHERE user_id = ? AND conversation_id = ? ORDER BY seq`), userID, convID)
	if err != nil {
		return nil, fmt.Errorf("turns of conversation %q of user %q: %w", convID, userID, err)
	}
	defer func() { _ = rows.Close() }() // read-only; rows.Err is checked below
	turns := []Turn{}
	for rows.Next() {
		var (
			t                Turn
			msgs             string
			results, digests sql.NullString
		)
		if err := rows.Scan(&t.Seq, &t.QueryID, &msgs, &results, &digests); err != nil {
			return nil, fmt.Errorf("turns of conversation %q of user %q: %w", convID, userID, err)
		}
		t.Messages, t.Results, t.Digests = json.RawMessage(msgs), rawJSON(results), rawJSON(digests)
		turns = append(turns, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("turns of conversation %q of user %q: %w", convID, userID, err)
	}
	if len(turns) == 0 {
		if err := s.exists(ctx, db, userID, convID); err != nil {
			return nil, err
		}
	}
	return turns, nil
}

// SetDigests gives turn seq of the conversation convID of userID the
// digests of its results, so that a later turn can trim them (a turn moved
// from the first schema has none). It is a no-op when the turn has digests
// already or does not exist.
func (s *Store) SetDigests(ctx context.Context, userID, convID string, seq int64, digests json.RawMessage) (err error) {
	ctx, end := s.call(ctx)
	defer end(&err)
	if err := s.check(userID, convID); err != nil {
		return err
	}
	if len(digests) == 0 || !json.Valid(digests) {
		return fmt.Errorf("digests of turn %d of conversation %q of user %q are not valid JSON", seq, convID, userID)
	}
	db := s.db
	if _, err := db.ExecContext(ctx, s.q(`UPDATE turns SET digests = ?
		WHERE user_id = ? AND conversation_id = ? AND seq = ? AND digests IS NULL`),
		string(digests), userID, convID, seq); err != nil {
		return fmt.Errorf("digests of turn %d of conversation %q of user %q: %w", seq, convID, userID, err)
	}
	return nil
}

// exists returns nil when the conversation convID of userID exists, and
// [ErrNotFound] when it does not.
func (s *Store) exists(ctx context.Context, db dbtx, userID, convID string) error {
	var one int
	err := db.QueryRowContext(ctx, s.q(`SELECT 1 FROM conversations WHERE user_id = ? AND id = ?`), userID, convID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("conversation %q of user %q: %w", convID, userID, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("conversation %q of user %q: %w", convID, userID, err)
	}
	return nil
}
