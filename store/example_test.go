package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/elysia-go/elysia/store"
)

// A query's turn (the messages and results it added) and its events are
// saved together, under the conversation's lock, and read back after a
// restart.
func Example() {
	dir, err := os.MkdirTemp("", "elysia-store-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = os.RemoveAll(dir) }() // best effort: a temporary folder
	ctx := context.Background()

	s, err := store.Open(ctx, filepath.Join(dir, "elysia.db"), nil)
	if err != nil {
		log.Fatal(err)
	}
	unlock, err := s.Lock(ctx, "alice", "c1")
	if err != nil {
		log.Fatal(err)
	}
	c := &store.Conversation{UserID: "alice", ID: "c1", Title: "Groceries"}
	turn := &store.Turn{QueryID: "q1", Messages: json.RawMessage(`["add milk"]`)}
	events := []store.NewEvent{
		{Envelope: json.RawMessage(`{"type": "text", "query_id": "q1", "payload": {}}`)},
		{Envelope: json.RawMessage(`{"type": "completed", "query_id": "q1", "payload": {}}`)},
	}
	if err := s.SaveQuery(ctx, c, turn, "q1", events); err != nil {
		log.Fatal(err)
	}
	unlock()
	if err := s.Close(); err != nil {
		log.Fatal(err)
	}

	// After a restart.
	s, err = store.Open(ctx, filepath.Join(dir, "elysia.db"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := s.Close(); err != nil {
			log.Print(err)
		}
	}()
	got, err := s.GetConversation(ctx, "alice", "c1")
	if err != nil {
		log.Fatal(err)
	}
	turns, err := s.Turns(ctx, "alice", "c1")
	if err != nil {
		log.Fatal(err)
	}
	saved, err := s.Events(ctx, "alice", "c1")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(got.Title, string(turns[0].Messages), len(saved), "events")
	// Output: Groceries ["add milk"] 2 events
}
