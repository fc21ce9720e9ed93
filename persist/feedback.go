package persist

import (
	"context"
	"time"

	"github.com/elysia-go/elysia/store"
)

// AddFeedback records a rating of a query's answer, replacing an earlier
// one.
func (p *Store) AddFeedback(ctx context.Context, userID, convID, queryID string, rating int) (err error) {
	defer func() { err = notFound(err) }()
	return p.s.SaveFeedback(ctx, store.Feedback{UserID: userID, ConversationID: convID, QueryID: queryID, Rating: rating})
}

// RemoveFeedback deletes a query's rating; a missing one is an error
// matching tree.ErrNotFound.
func (p *Store) RemoveFeedback(ctx context.Context, userID, convID, queryID string) (err error) {
	defer func() { err = notFound(err) }()
	return notFound(p.s.DeleteFeedback(ctx, userID, convID, queryID))
}

// EachFeedback calls fn with each rating the user gave and when, oldest
// first.
func (p *Store) EachFeedback(ctx context.Context, userID string, fn func(rating int, at time.Time)) (err error) {
	defer func() { err = notFound(err) }()
	list, err := p.s.ListFeedback(ctx, userID)
	if err != nil {
		return err
	}
	for _, f := range list {
		fn(f.Rating, f.CreatedAt)
	}
	return nil
}
