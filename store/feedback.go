package store

import (
	"context"
	"fmt"
	"time"
)

// Feedback is one rating of a query's answer.
type Feedback struct {
	UserID         string
	ConversationID string
	QueryID        string
	// Rating is Elysia's scale: 0 negative, 1 positive, 2 superpositive.
	Rating int
	// CreatedAt is when the rating was last given, in UTC.
	CreatedAt time.Time
}

// SaveFeedback records f, replacing an earlier rating of the same query
// (f.CreatedAt is set to now).
func (s *Store) SaveFeedback(ctx context.Context, f Feedback) (err error) {
	ctx, end := s.call(ctx)
	defer end(&err)
	if err := s.check(f.UserID, f.ConversationID, f.QueryID); err != nil {
		return err
	}
	_, err = s.db.ExecContext(ctx, s.q(`INSERT INTO feedback (user_id, conversation_id, query_id, rating, created_at)
		VALUES (?, ?, ?, ?, ?) ON CONFLICT (user_id, conversation_id, query_id)
		DO UPDATE SET rating = excluded.rating, created_at = excluded.created_at`),
		f.UserID, f.ConversationID, f.QueryID, f.Rating, s.now().UnixMicro())
	if err != nil {
		return fmt.Errorf("save feedback on query %q: %w", f.QueryID, err)
	}
	return nil
}

// DeleteFeedback removes the rating of a query, or returns [ErrNotFound].
func (s *Store) DeleteFeedback(ctx context.Context, userID, convID, queryID string) (err error) {
	ctx, end := s.call(ctx)
	defer end(&err)
	if err := s.check(userID, convID, queryID); err != nil {
		return err
	}
	res, err := s.db.ExecContext(ctx, s.q(`DELETE FROM feedback WHERE user_id = ? AND conversation_id = ? AND query_id = ?`),
		userID, convID, queryID)
	if err != nil {
		return fmt.Errorf("delete feedback on query %q: %w", queryID, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("delete feedback on query %q: %w", queryID, err)
	} else if n == 0 {
		return fmt.Errorf("feedback on query %q: %w", queryID, ErrNotFound)
	}
	return nil
}

// ListFeedback returns every rating a user gave, oldest first.
func (s *Store) ListFeedback(ctx context.Context, userID string) (_ []Feedback, err error) {
	ctx, end := s.call(ctx)
	defer end(&err)
	if err := s.check(userID); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT conversation_id, query_id, rating, created_at FROM feedback
		WHERE user_id = ? ORDER BY created_at, conversation_id, query_id`), userID)
	if err != nil {
		return nil, fmt.Errorf("feedback of user %q: %w", userID, err)
	}
	defer func() { _ = rows.Close() }() // read-only; rows.Err is checked below
	out := []Feedback{}
	for rows.Next() {
		f := Feedback{UserID: userID}
		var created int64
		if err := rows.Scan(&f.ConversationID, &f.QueryID, &f.Rating, &created); err != nil {
			return nil, fmt.Errorf("feedback of user %q: %w", userID, err)
		}
		f.CreatedAt = fromMicros(created)
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("feedback of user %q: %w", userID, err)
	}
	return out, nil
}
