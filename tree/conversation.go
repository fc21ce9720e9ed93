package tree

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/tree/prompt"
)

// Store persists conversations. cmd adapts the store package to it.
//
// Load returns the saved state of a conversation, with ok false (and a nil
// error) when none is saved. Save stores the state, replacing the previous
// one, and appends events (one query's envelopes, in order; nil after a tree
// change) to the conversation's event log. The Manager calls Save after every
// query, before the query's completed event is emitted. Both are called from
// many goroutines at once, for different conversations.
type Store interface {
	Load(ctx context.Context, userID, conversationID string) (state ConversationState, ok bool, err error)
	Save(ctx context.Context, state ConversationState, events []tools.Envelope) error
}

// StoreLister is implemented by Stores that can list a user's conversations.
type StoreLister interface {
	List(ctx context.Context, userID string) ([]ConversationInfo, error)
}

// StoreDeleter is implemented by Stores that can delete a conversation.
type StoreDeleter interface {
	Delete(ctx context.Context, userID, conversationID string) error
}

// ConversationState is what is saved of a conversation: enough to rebuild it
// after a restart, with its tree rebuilt from InitMode and Ops onto the
// gateways configured then.
type ConversationState struct {
	UserID         string                                 `json:"user_id"`
	ConversationID string                                 `json:"conversation_id"`
	Title          string                                 `json:"title"`
	InitMode       InitMode                               `json:"init_mode"`
	Ops            []Op                                   `json:"ops"`
	History        []Message                              `json:"history"`
	Environment    map[string]map[string][]tools.EnvEntry `json:"environment"`
	UpdatedAt      time.Time                              `json:"updated_at"`
	// Version is the Store's count of the conversation's saves when it
	// was loaded (see [StoreVersioner]); 0 when the Store does not count.
	Version int64 `json:"-"`
}

// ConversationInfo is one entry of a user's conversation list.
type ConversationInfo struct {
	ConversationID string    `json:"conversation_id"`
	Title          string    `json:"title"`
	UpdatedAt      time.Time `json:"updated_at"`
}

// Conversation is one conversation of one user: its tree (shared with the
// Manager's default until changed), history and environment. It is created
// by [Manager.Conversation] and safe for concurrent use; [Conversation.Run]
// runs one query at a time.
type Conversation struct {
	m *Manager

	// mode, tree, gen, movedAt, ops, deleted, changes, saved, sv, newer,
	// older and firstProfile are guarded by m.mu. With no ops, the conversation runs on the
	// Manager's default tree for mode; with ops, on tree, its own, built on
	// generation gen of the Manager's registry (nil or older: rebuilt from
	// ops on use, see Manager.treeOf).
	// deleted is set by Manager.Delete; a deleted conversation is never
	// saved again. changes counts the changes made to the conversation in
	// memory, and saved how many of them the Store has; only a
	// conversation with nothing unsaved may be dropped from memory. sv is
	// what the Store holds of it (nil: nothing known yet), for saving only
	// what changed (saver.go).
	// movedAt, newer and older place it in Manager.lru. m, mode, tree, gen,
	// movedAt and ops, which a lookup and Tree read, come first, so that
	// GET /tree reads the start of the conversation only.
	mode    InitMode
	tree    *Tree
	gen     uint64
	movedAt uint64
	ops     []Op
	deleted bool
	changes uint64
	saved   uint64
	sv      *savedState
	newer   *Conversation
	older   *Conversation
	// firstProfile is the user's profile, read when a query created the
	// conversation, for that query's run (profileForRun); nil otherwise.
	firstProfile *Profile

	userID string
	id     string
	sem    chan struct{} // holds a token while a query runs
	saving chan struct{} // holds a token while c is saved or deleted in the Store
	// unsaved is a query's save that failed and may have gone through all
	// the same; only the holder of the saving token uses it (saver.go).
	unsaved *unsavedQuery
	env     tools.Environment
	// promptEnv is env as decision prompts read it: a snapshot taken by
	// the first run that needs it, then appended to as runs add results,
	// so that a decision does not copy the whole environment. Only the
	// run holding the query token (sem) uses it; its lists are only
	// appended to, so slices taken from it stay valid.
	promptEnv map[string]map[string][]tools.EnvEntry
	// forms keeps the prompt forms of promptEnv's entries across queries
	// (see prompt.FormCache); it describes promptEnv, and is dropped
	// whenever promptEnv is. Like promptEnv, only the run holding the
	// query token uses it.
	forms prompt.FormCache

	// mu guards title, history, queries and updated.
	mu      sync.Mutex
	title   string
	history []Message
	queries int
	updated time.Time
}

func newConversation(m *Manager, userID, id string, mode InitMode) *Conversation {
	return &Conversation{m: m, userID: userID, id: id, mode: mode,
		sem: make(chan struct{}, 1), saving: make(chan struct{}, 1)}
}

// restoreLocked loads a saved state; m.mu is held.
func (c *Conversation) restoreLocked(st ConversationState) {
	if mode, err := ParseInitMode(string(st.InitMode)); err == nil {
		c.mode = mode
	}
	if len(st.Ops) > 0 {
		c.ops = slices.Clone(st.Ops)
	}
	c.title = st.Title
	c.history = slices.Clone(st.History)
	c.queries = len(st.History) / 2
	c.updated = st.UpdatedAt
	if len(st.Environment) > 0 {
		c.env.Restore(st.Environment)
	}
	c.promptEnv, c.forms = nil, prompt.FormCache{}
	c.sv = newSavedState(st)
}

// UserID returns the id of the conversation's user.
func (c *Conversation) UserID() string { return c.userID }

// ID returns the conversation's id.
func (c *Conversation) ID() string { return c.id }

// Tree returns the tree the conversation's next query runs on. It is shared
// and must not be changed; use [Manager.Apply].
func (c *Conversation) Tree() *Tree { return c.m.treeOf(c) }

// Mode returns the conversation's init mode.
func (c *Conversation) Mode() InitMode {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	return c.mode
}

// History returns a copy of the conversation's history.
func (c *Conversation) History() []Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.history)
}

// Info returns the conversation's list entry.
func (c *Conversation) Info() ConversationInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	return ConversationInfo{ConversationID: c.id, Title: c.title, UpdatedAt: c.updated}
}

// treeState returns c's init mode and a copy of its ops, never nil, as
// the Store saves them. It takes the Manager's lock, which guards both.
func (c *Conversation) treeState() (InitMode, []Op) {
	c.m.mu.Lock()
	mode, ops := c.mode, slices.Clone(c.ops)
	c.m.mu.Unlock()
	if ops == nil {
		ops = []Op{}
	}
	return mode, ops
}

// State returns the conversation's state, as saved.
func (c *Conversation) State() ConversationState {
	mode, ops := c.treeState()
	c.mu.Lock()
	st := ConversationState{UserID: c.userID, ConversationID: c.id, Title: c.title,
		InitMode: mode, Ops: ops, History: slices.Clone(c.history), UpdatedAt: c.updated}
	c.mu.Unlock()
	if st.History == nil {
		st.History = []Message{}
	}
	st.Environment = c.env.Snapshot()
	return st
}

// makeTitle derives a conversation title from its first query: the first
// line, whitespace collapsed, cut at a word boundary near 60 characters.
func makeTitle(query string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(query), "\n")
	t := strings.Join(strings.Fields(line), " ")
	const max = 60
	if utf8.RuneCountInString(t) <= max {
		if t == "" {
			return "New conversation"
		}
		return t
	}
	r := []rune(t)[:max]
	cut := string(r)
	if i := strings.LastIndexByte(cut, ' '); i > max/2 {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, " ,.;:") + "…"
}
