package store

import (
	"errors"
	"testing"
)

func testFeedback(t *testing.T, newDSN newDSN) {
	t.Helper()
	s := openStore(t, newDSN(t))
	ctx := t.Context()
	for _, f := range []Feedback{
		{UserID: "alice", ConversationID: "c1", QueryID: "q1", Rating: 1},
		{UserID: "alice", ConversationID: "c1", QueryID: "q2", Rating: 0},
		{UserID: "alice", ConversationID: "c1", QueryID: "q1", Rating: 2}, // a new rating of q1
		{UserID: "bob", ConversationID: "c1", QueryID: "q1", Rating: 1},
	} {
		if err := s.SaveFeedback(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.ListFeedback(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	ratings := map[string]int{}
	for _, f := range got {
		ratings[f.QueryID] = f.Rating
		if f.CreatedAt.IsZero() {
			t.Errorf("feedback on %s has no time", f.QueryID)
		}
	}
	if len(got) != 2 || ratings["q1"] != 2 || ratings["q2"] != 0 {
		t.Errorf("alice's feedback = %+v, want q1 rated 2 and q2 rated 0", got)
	}
	if err := s.DeleteFeedback(ctx, "alice", "c1", "q2"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteFeedback(ctx, "alice", "c1", "q2"); !errors.Is(err, ErrNotFound) {
		t.Errorf("second DeleteFeedback = %v, want ErrNotFound", err)
	}
	if got, _ := s.ListFeedback(ctx, "bob"); len(got) != 1 {
		t.Errorf("bob's feedback = %+v, want his one rating", got)
	}
	if got, err := s.ListFeedback(ctx, "nobody"); err != nil || got == nil || len(got) != 0 {
		t.Errorf("feedback of a user without any = %v, %v; want an empty list", got, err)
	}
}
