package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Conversation is a conversation's saved row: what it is, not what was
// said in it. What each query said and found is kept in turns of their own
// ([Turn], [Store.SaveQuery]), so that saving a query appends to the
// conversation instead of rewriting a row that grows with it. The JSON blob
// belongs to the tree layer; the store keeps it byte for byte, and nil (or
// empty) means absent.
type Conversation struct {
	// UserID and ID together are the key: two users may each have a
	// conversation with the same ID.
	UserID string
	ID     string
	// Title is the conversation's title, "" until one is set.
	Title string
	// InitMode is the tree's initialisation mode ("one_branch", ...).
	InitMode string
	// TreeOps are the tools and branches added or removed through the API.
	TreeOps json.RawMessage
	// Turns counts the conversation's turns; read only, set by the store.
	Turns int64
	// Version counts the saves of the conversation: every save method
	// sets it to the stored one, one more than the last save's. It is
	// read only: the value the caller sets is ignored.
	Version int64
	// CreatedAt and UpdatedAt are in UTC with microsecond precision. The
	// save methods set both: CreatedAt to the stored creation time (the
	// given one, or now, when the conversation is created) and UpdatedAt to
	// now, whatever they held.
	CreatedAt time.Time
	UpdatedAt time.Time
}

// ConversationSummary is a line of [Store.ListConversations].
type ConversationSummary struct {
	ID        string
	Title     string
	UpdatedAt time.Time
}

// Event is one saved event of a conversation's event log.
type Event struct {
	// Seq orders the saves of a conversation's events: the events of one
	// save share it, in their order, and a later save's is greater. It is
	// not dense (numbers are shared by all conversations).
	Seq int64
	// QueryID is the query that produced the event.
	QueryID string
	// Envelope is the event as it was sent on the wire, or its digest once
	// a later query trimmed it (see [NewEvent]).
	Envelope json.RawMessage
}

// The columns each save method owns when the conversation already exists:
// the tree API and queries write different parts of a conversation, so that
// a stale copy in one cannot undo the other's last save. On insert every
// column is written. Every save counts a version, and only the insert
// leaves it at 1 (a row the turns migration gave version 0 goes to 2), so
// that a save can tell it created the conversation.
const (
	upsertConversation = `INSERT INTO conversations
		(user_id, id, title, init_mode, tree_ops, created_at, updated_at, version, turns)
		VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?)
		ON CONFLICT (user_id, id) DO UPDATE SET version = CASE WHEN conversations.version < 1 THEN 2 ELSE conversations.version + 1 END, `
	saveConversationSet = `init_mode = excluded.init_mode,
		tree_ops = excluded.tree_ops, updated_at = excluded.updated_at RETURNING created_at, version, turns`
	saveQuerySet = `title = excluded.title, turns = conversations.turns + excluded.turns,
		updated_at = excluded.updated_at RETURNING created_at, version, turns`
	replaceSet = `title = excluded.title, init_mode = excluded.init_mode, tree_ops = excluded.tree_ops,
		turns = excluded.turns, updated_at = excluded.updated_at RETURNING created_at, version, turns`
)

// The reads every query makes: a query on a conversation not in memory
// loads it (a new one included), and one under a replica lock checks its
// version. SQLite runs them from statements prepared once (queryRow).
const (
	selectConversation = `SELECT title, init_mode, tree_ops, turns, version, created_at, updated_at
		FROM conversations WHERE user_id = ? AND id = ?`
	selectVersion = `SELECT version FROM conversations WHERE user_id = ? AND id = ?`
)

// GetConversation returns the row of the conversation convID of userID, or
// [ErrNotFound]; [Store.Turns] returns what its queries said.
func (s *Store) GetConversation(ctx context.Context, userID, convID string) (_ *Conversation, err error) {
	ctx, end := s.call(ctx)
	defer end(&err)
	if err := s.check(userID, convID); err != nil {
		return nil, err
	}
	c := &Conversation{UserID: userID, ID: convID}
	var (
		treeOps          sql.NullString
		created, updated int64
	)
	db := s.db
	err = s.queryRow(ctx, db, selectConversation, userID, convID).
		Scan(&c.Title, &c.InitMode, &treeOps, &c.Turns, &c.Version, &created, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("conversation %q of user %q: %w", convID, userID, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get conversation %q of user %q: %w", convID, userID, err)
	}
	c.TreeOps = rawJSON(treeOps)
	c.CreatedAt, c.UpdatedAt = fromMicros(created), fromMicros(updated)
	return c, nil
}

// Version returns the version of the conversation convID of userID (see
// [Conversation.Version]), or [ErrNotFound]. It reads one small row, so a
// replica can check cheaply whether its copy of a conversation is the
// latest saved.
func (s *Store) Version(ctx context.Context, userID, convID string) (_ int64, err error) {
	ctx, end := s.call(ctx)
	defer end(&err)
	if err := s.check(userID, convID); err != nil {
		return 0, err
	}
	ref := convRef{userID, convID}
	epoch, cached := s.currentReads(ctx)
	if cached {
		if v, ok := s.reads.version(epoch, ref); ok {
			return v, nil
		}
	}
	var v int64
	err = s.queryRow(ctx, s.db, selectVersion, userID, convID).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("conversation %q of user %q: %w", convID, userID, ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("version of conversation %q of user %q: %w", convID, userID, err)
	}
	if cached {
		s.reads.readVersion(epoch, ref, v)
	}
	return v, nil
}

// ListConversations returns userID's conversations, most recently updated
// first (ties by id). It returns an empty, non-nil slice when there are none.
func (s *Store) ListConversations(ctx context.Context, userID string) (_ []ConversationSummary, err error) {
	ctx, end := s.call(ctx)
	defer end(&err)
	if err := s.check(userID); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT id, title, updated_at FROM conversations
		WHERE user_id = ? ORDER BY updated_at DESC, id`), userID)
	if err != nil {
		return nil, fmt.Errorf("list conversations of user %q: %w", userID, err)
	}
	defer func() { _ = rows.Close() }() // read-only; rows.Err is checked below
	list := []ConversationSummary{}
	for rows.Next() {
		var (
			cs      ConversationSummary
			updated int64
		)
		if err := rows.Scan(&cs.ID, &cs.Title, &updated); err != nil {
			return nil, fmt.Errorf("list conversations of user %q: %w", userID, err)
		}
		cs.UpdatedAt = fromMicros(updated)
		list = append(list, cs)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list conversations of user %q: %w", userID, err)
	}
	return list, nil
}

// Events returns the event log of the conversation convID of userID, oldest
// first, or [ErrNotFound] when the conversation does not exist. A
// conversation without events has an empty, non-nil log.
func (s *Store) Events(ctx context.Context, userID, convID string) (_ []Event, err error) {
	ctx, end := s.call(ctx)
	defer end(&err)
	if err := s.check(userID, convID); err != nil {
		return nil, err
	}
	db := s.db
	rows, err := db.QueryContext(ctx, s.q(`SELECT seq, query_id, envelope, envelopes FROM events
		WHERE user_id = ? AND conversation_id = ? ORDER BY seq`), userID, convID)
	if err != nil {
		return nil, fmt.Errorf("events of conversation %q of user %q: %w", convID, userID, err)
	}
	defer func() { _ = rows.Close() }() // read-only; rows.Err is checked below
	events := []Event{}
	for rows.Next() {
		var (
			e         Event
			env, pack []byte
		)
		if err := rows.Scan(&e.Seq, &e.QueryID, &env, &pack); err != nil {
			return nil, fmt.Errorf("events of conversation %q of user %q: %w", convID, userID, err)
		}
		if pack == nil {
			e.Envelope = json.RawMessage(env)
			events = append(events, e)
			continue
		}
		envelopes, err := splitPacked(pack)
		if err != nil {
			// Not written by a save (which checks each event): the row's
			// last event stands for it, as a replica from before reads it.
			s.logger.WarnContext(ctx, "a saved query's events do not read as a JSON array: replaying its last event only",
				"user_id", userID, "conversation_id", convID, "query_id", e.QueryID, "row", e.Seq, logKeyErr, err)
			envelopes = []json.RawMessage{env}
		}
		for _, env := range envelopes {
			e.Envelope = env
			events = append(events, e)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("events of conversation %q of user %q: %w", convID, userID, err)
	}
	if len(events) == 0 {
		var one int
		err := db.QueryRowContext(ctx, s.q(`SELECT 1 FROM conversations WHERE user_id = ? AND id = ?`), userID, convID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("conversation %q of user %q: %w", convID, userID, ErrNotFound)
		}
		if err != nil {
			return nil, fmt.Errorf("events of conversation %q of user %q: %w", convID, userID, err)
		}
	}
	return events, nil
}

// DeleteConversation deletes the conversation convID of userID and its
// event log, or returns [ErrNotFound]. The user stays.
func (s *Store) DeleteConversation(ctx context.Context, userID, convID string) (err error) {
	ctx, end := s.call(ctx)
	defer end(&err)
	if err := s.check(userID, convID); err != nil {
		return err
	}
	defer func() {
		if err != nil && !errors.Is(err, ErrNotFound) {
			err = fmt.Errorf("delete conversation %q of user %q: %w", convID, userID, err)
		}
	}()
	// Before and after: a read in flight may have seen the conversation.
	s.reads.forgetConversation(convRef{userID, convID})
	defer s.reads.forgetConversation(convRef{userID, convID})
	db := s.db
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }() // sql.ErrTxDone after Commit
	// The foreign keys would cascade, but deleting the events and turns explicitly
	// does not depend on SQLite's foreign_keys pragma.
	for _, table := range []string{"events", "turns"} {
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM `+table+` WHERE user_id = ? AND conversation_id = ?`), userID, convID); err != nil {
			return err
		}
	}
	res, err := tx.ExecContext(ctx, s.q(`DELETE FROM conversations WHERE user_id = ? AND id = ?`), userID, convID)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("conversation %q of user %q: %w", convID, userID, ErrNotFound)
	}
	return tx.Commit()
}
