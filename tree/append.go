package tree

import (
	"context"
	"maps"
	"time"

	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/tree/prompt"
)

// StoreAppender is implemented by Stores that save what changed in a
// conversation instead of its whole state, so that saving a query costs
// the same however long the conversation is. When the Store implements
// it, the Manager calls Append instead of [Store.Save].
//
// Append saves ch and appends events (one query's envelopes, in order; nil
// after a tree change) to the conversation's event log, all or nothing, and
// returns the conversation's version in the Store after the save (see
// [StoreVersioner]). A change with no Messages, no Results and nil events
// is a tree change: it writes InitMode and Ops only (and creates the
// conversation when it is new); any other is a query's and writes Title,
// the Messages and Results, and events, but not InitMode or Ops. It is
// called from many goroutines at once, for different conversations, and
// never concurrently for one.
type StoreAppender interface {
	Append(ctx context.Context, ch ConversationChange, events []tools.Envelope) (version int64, err error)
}

// StoreVersioner is implemented by Stores that count the saves of each
// conversation. Version returns the count, with ok false (and a nil error)
// when the conversation is not saved. With a [Locker], a query reloads its
// conversation from the Store only when the Store's version is not the one
// the copy in memory was loaded or last saved at.
type StoreVersioner interface {
	Version(ctx context.Context, userID, conversationID string) (version int64, ok bool, err error)
}

// ConversationChange is what changed in a conversation since its last
// save: see [StoreAppender].
type ConversationChange struct {
	UserID         string
	ConversationID string
	Title          string
	InitMode       InitMode
	// Ops are all the conversation's ops (not only the new ones).
	Ops []Op
	// Messages are the history messages added since the last save, oldest
	// first: they follow the saved history.
	Messages []Message
	// Results are the environment entries added since the last save, in
	// the shape of [ConversationState.Environment]: each list follows the
	// saved list of the same tool and name.
	Results   map[string]map[string][]tools.EnvEntry
	UpdatedAt time.Time
	// SaveKey names a query's save, the same for every retry of it, so
	// that a Store can write it once however often it is sent (a save
	// told it failed may have committed all the same); "" for a tree
	// change. A query's id cannot serve: clients choose it, and may
	// reuse it.
	SaveKey string
	// ResultPayloads are the payloads of result events among the events
	// saved with the change, by envelope ID, as they were before they were
	// encoded, so that a Store can make a short form of a large result
	// without decoding its envelope again. It may miss some (or be nil):
	// the Store then decodes those. They must not be changed.
	ResultPayloads map[string]tools.ResultPayload
}

// savedState is what the Store holds of a conversation, so that a save
// sends only what changed. It is never changed once set: the saver sets a
// new one after each save.
type savedState struct {
	// version is the Store's version of the conversation this copy was
	// loaded or last saved at; 0: unknown.
	version int64
	// messages counts the history messages saved.
	messages int
	// results counts the saved entries of each environment list.
	results map[prompt.ResultKey]int
}

// newSavedState returns the saved state of st, a state loaded from the
// Store.
func newSavedState(st ConversationState) *savedState {
	sv := &savedState{version: st.Version, messages: len(st.History)}
	for tool, byName := range st.Environment {
		for name, list := range byName {
			if sv.results == nil {
				sv.results = map[prompt.ResultKey]int{}
			}
			sv.results[prompt.ResultKey{Tool: tool, Name: name}] = len(list)
		}
	}
	return sv
}

// change returns what changed in c since sv was saved, and the counts of
// results to record once it is saved. Only a query's save (with events, or
// with new messages) reads the environment: a tree change does not write
// it.
func (c *Conversation) change(sv *savedState, query bool) (ConversationChange, map[prompt.ResultKey]int) {
	mode, ops := c.treeState()
	c.mu.Lock()
	ch := ConversationChange{UserID: c.userID, ConversationID: c.id, Title: c.title, InitMode: mode, Ops: ops, UpdatedAt: c.updated}
	if sv.messages < len(c.history) {
		ch.Messages = append([]Message(nil), c.history[sv.messages:]...)
	}
	c.mu.Unlock()
	if !query && len(ch.Messages) == 0 {
		return ch, sv.results
	}
	counts := sv.results
	ch.Results = c.env.Since(func(tool, name string) int { return sv.results[prompt.ResultKey{Tool: tool, Name: name}] })
	if ch.Results != nil {
		counts = make(map[prompt.ResultKey]int, len(sv.results)+1)
		maps.Copy(counts, sv.results)
		for tool, byName := range ch.Results {
			for name, added := range byName {
				counts[prompt.ResultKey{Tool: tool, Name: name}] += len(added)
			}
		}
	}
	return ch, counts
}
