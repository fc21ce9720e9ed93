package tree

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/tree/prompt"
)

// Options configure a [Manager]. A nil *Options means all defaults.
type Options struct {
	// DefaultMode is the init mode of new conversations. Zero: [OneBranch].
	DefaultMode InitMode
	// RecursionLimit bounds the passes through the tree per query. Zero: 5.
	RecursionLimit int
	// MaxRetries is how often a decision is re-asked after an answer that
	// names no available option or has bad arguments. Zero: 3; negative: 0.
	MaxRetries int
	// QueryWait is how long a query waits for the conversation's previous
	// query to finish before failing with [ErrBusy]. Zero: 30 s.
	QueryWait time.Duration
	// StepTimeout bounds one tool run. Zero: 2 minutes.
	StepTimeout time.Duration
	// ModelTimeout bounds one model call. Zero: 2 minutes.
	ModelTimeout time.Duration
	// MaxPromptEnvironment bounds the bytes of the environment (the tool
	// results) in a decision prompt. Over it, the prompt shows the newest
	// results whole and the others in a short form that keeps their
	// _REF_IDs and says how much was left out; the environment itself,
	// saved and shown to the user, keeps everything. Zero: 64 KiB;
	// negative: no bound.
	MaxPromptEnvironment int
	// MaxPromptBytes is the byte budget of a decision prompt's context
	// (the human message, docs/DECISION_PROMPT.md). Within it the latest
	// turns are kept whole and older ones folded into a short summary, and
	// results of earlier queries take a small share, so that a long
	// conversation's prompt stays near a new one's; the environment gets
	// what the rest leaves, at most MaxPromptEnvironment. Zero: 24 KiB;
	// negative: no budget (the last 20 messages, no summary).
	MaxPromptBytes int
	// DescribeOptions makes the decision context describe each available
	// option in full (its description and inputs), for a model that is not
	// sent the options as functions and answers with the JSON fallback
	// (langchaingo's ollama client sends none). Otherwise the context names
	// the options and says which ones end the run: their descriptions and
	// inputs reach the model once, in the functions, not twice.
	DescribeOptions bool
	// MaxConversations bounds the conversations kept in memory when Store
	// is set. Over it, the least recently used idle ones (no query
	// running, every change saved) are dropped from memory, and loaded
	// again from the Store when next used. Zero: 50,000; negative: no
	// bound. Without a Store, nothing is dropped.
	MaxConversations int
	// Store loads and saves conversations. Nil: memory only.
	Store Store
	// Profiles gives each user's agent description, style and end goal,
	// read at the start of each of the user's queries. Nil: the default.
	Profiles Profiles
	// Locker serialises a conversation's queries across the processes
	// that share Store ([Manager.Query]). Nil: queries are serialised
	// within this process only.
	Locker Locker
	// Logger receives warnings and per-step debug logs. Nil: discarded.
	Logger *slog.Logger
	// ModelName and ModelProvider name the model in the model calls'
	// trace spans (gen_ai.request.model, gen_ai.provider.name); "" leaves
	// them out.
	ModelName, ModelProvider string
}

// Manager is the facade over the parts that keep the trees and the
// conversations: the registry (registry.go: the gateway placements, the
// tools that can be added by name and the default tree of each init mode,
// an immutable snapshot swapped atomically), the cache of conversations in
// memory (cache.go, lru.go), the saver that orders their Store calls
// (saver.go), and each user's own tree changes (userops.go).
//
// Conversations that have not changed their tree share the snapshot's
// default tree. One that has keeps its own, built on the snapshot's
// generation; when [Manager.SetTools] swaps in a new snapshot, the own
// trees are rebuilt lazily, each on its conversation's next use, without
// the cache's lock held.
//
// A Manager is safe for concurrent use. Lock order: a user's token (see
// ApplyUser), then a Conversation's saving token, then Manager.mu (the
// cache's mu), then the Conversation's mu. users.mu is taken alone, and the
// registry has no lock. No mutex is held across I/O, a model or tool call,
// an emit, or the building of a tree; the tokens exist to order Store calls
// and are held across them.
type Manager struct {
	opts   Options
	logger *slog.Logger
	reg    registry
	// cache is embedded: its mu, convs, lru and pending are the Manager's,
	// which Conversation and the decision loop lock and read as m.mu and
	// m.convs.
	cache
	saver saver
	users users
	// questions are the runs' questions waiting for their users (ask.go).
	questions questions
}

// NewManager returns a Manager with the built-in tools and no gateway. It does
// no I/O; call [Manager.SetTools] to place gateways.
func NewManager(opts *Options) *Manager {
	m := &Manager{}
	if opts != nil {
		m.opts = *opts
	}
	o := &m.opts
	if mode, err := ParseInitMode(string(o.DefaultMode)); err == nil {
		o.DefaultMode = mode
	} else {
		o.DefaultMode = OneBranch
	}
	if o.RecursionLimit <= 0 {
		o.RecursionLimit = 5
	}
	if o.MaxRetries == 0 {
		o.MaxRetries = 3
	} else if o.MaxRetries < 0 {
		o.MaxRetries = 0
	}
	if o.QueryWait <= 0 {
		o.QueryWait = 30 * time.Second
	}
	if o.StepTimeout <= 0 {
		o.StepTimeout = 2 * time.Minute
	}
	if o.ModelTimeout <= 0 {
		o.ModelTimeout = 2 * time.Minute
	}
	if o.MaxConversations == 0 {
		o.MaxConversations = defaultMaxConversations
	}
	if o.MaxPromptEnvironment == 0 {
		o.MaxPromptEnvironment = prompt.DefaultMaxEnvironment
	}
	m.logger = o.Logger
	if m.logger == nil {
		m.logger = slog.New(slog.DiscardHandler)
	}
	bound := 0 // without a Store, memory is the only copy
	if o.Store != nil && o.MaxConversations > 0 {
		bound = o.MaxConversations
	}
	m.cache.init(bound) //nolint:staticcheck // QF1008: the cache's init, named as such
	m.saver = saver{store: o.Store, cache: &m.cache}
	m.users.ops = map[string][]Op{}
	m.users.locks = map[string]*userLock{}
	m.reg.logger = m.logger
	m.reg.set(nil)
	return m
}

// SetTools replaces the gateway placements, in config file order: new
// gateways are added to every tree, gone ones removed, changed ones (a new
// Tool value under the same name) replaced. Default trees are rebuilt; every
// conversation that changed its tree gets the new default with its ops
// replayed, on its next use. Runs in flight keep the tree they started
// with. SetTools takes no lock that conversations wait for.
func (m *Manager) SetTools(placements []Placement) {
	m.reg.set(slices.Clone(placements))
}

// DefaultMode returns the init mode of new conversations that name none.
func (m *Manager) DefaultMode() InitMode { return m.opts.DefaultMode }

// DefaultTree returns the shared default tree of mode ("" means the
// Manager's default mode). The tree must not be changed.
func (m *Manager) DefaultTree(mode InitMode) (*Tree, error) {
	mode, err := m.mode(mode)
	if err != nil {
		return nil, err
	}
	return m.reg.load().defaultTree(mode), nil
}

func (m *Manager) mode(mode InitMode) (InitMode, error) {
	if mode == "" {
		return m.opts.DefaultMode, nil
	}
	return ParseInitMode(string(mode))
}

// AvailableTools lists the tools that can be added to a tree by name: the
// built-ins, then the gateways in placement order.
func (m *Manager) AvailableTools() []ToolInfo {
	return m.reg.load().available()
}

// InitConversation (re)initialises a conversation's tree with mode, dropping
// the ops applied to it; its history and environment stay.
func (m *Manager) InitConversation(ctx context.Context, userID, conversationID string, mode InitMode) (*Conversation, error) {
	mode, err := m.mode(mode)
	if err != nil {
		return nil, err
	}
	c, err := m.Conversation(ctx, userID, conversationID)
	if err != nil {
		return nil, err
	}
	if c, err = m.lockCurrent(ctx, c, "init"); err != nil {
		return nil, err
	}
	c.mode, c.tree, c.gen, c.ops = mode, nil, 0, nil
	c.changes++
	m.mu.Unlock()
	return c, m.save(ctx, c, nil)
}

// Apply performs op on the conversation's tree: the first change gives the
// conversation its own copy of the tree (copy on write). It returns the new
// tree, which must not be changed, and saves the conversation.
func (m *Manager) Apply(ctx context.Context, userID, conversationID string, op Op) (*Tree, error) {
	c, err := m.Conversation(ctx, userID, conversationID)
	if err != nil {
		return nil, err
	}
	return m.applyTo(ctx, c, op)
}

// applyTo performs op on c's tree and saves c. It fails with errDeleted,
// changing nothing, when c was deleted after it was looked up.
//
// The new tree is built outside m.mu, on the mode and ops read under it;
// if another change to the tree lands meanwhile, it is built again on that.
func (m *Manager) applyTo(ctx context.Context, c *Conversation, op Op) (*Tree, error) {
	what := "apply " + string(op.Kind) + " to"
	for {
		cur, err := m.lockCurrent(ctx, c, what)
		if err != nil {
			return nil, err
		}
		c = cur
		s := m.reg.load()
		mode, ops, own, gen := c.mode, c.ops, c.tree, c.gen
		m.mu.Unlock()
		t := m.treeFor(s, mode, ops, own, gen).Clone()
		err = op.apply(t, s.tools)
		m.mu.Lock()
		if !m.currentLocked(c) || c.mode != mode || !sameOps(c.ops, ops) {
			m.mu.Unlock()
			continue
		}
		if err != nil {
			m.mu.Unlock()
			return nil, err
		}
		c.tree, c.gen = t, s.gen
		c.ops = append(slices.Clip(ops), op)
		c.changes++
		m.mu.Unlock()
		return t, m.save(ctx, c, nil)
	}
}

// treeOf returns the tree c runs on now. An own tree built on an older
// snapshot than the current one is rebuilt here, outside m.mu, and kept
// unless c's tree changed meanwhile.
func (m *Manager) treeOf(c *Conversation) *Tree {
	s := m.reg.load()
	m.mu.Lock()
	mode, ops, own, gen := c.mode, c.ops, c.tree, c.gen
	m.mu.Unlock()
	t := m.treeFor(s, mode, ops, own, gen)
	if t == own || len(ops) == 0 {
		return t
	}
	m.mu.Lock()
	if c.mode == mode && sameOps(c.ops, ops) && (c.tree == nil || c.gen < s.gen) {
		c.tree, c.gen = t, s.gen
	}
	m.mu.Unlock()
	return t
}

// treeFor returns the tree, under snapshot s, of a conversation in mode with
// ops, whose own tree own was built on generation gen: the shared default
// when there are no ops, own when it is as new as s, else a new replay.
func (m *Manager) treeFor(s *snapshot, mode InitMode, ops []Op, own *Tree, gen uint64) *Tree {
	switch {
	case len(ops) == 0:
		return s.defaultTree(mode)
	case own != nil && gen >= s.gen:
		return own
	}
	return s.replay(mode, ops, m.logger)
}

// sameOps reports whether a and b are the same ops slice. A Conversation's
// ops are never changed in place, only replaced (applyTo appends to a
// clipped copy), so a slice read under m.mu may be used after it, and is
// still the conversation's when it is the same slice.
func sameOps(a, b []Op) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// Conversations lists a user's conversations, in memory and in the Store
// (when it implements [StoreLister]), most recently updated first.
func (m *Manager) Conversations(ctx context.Context, userID string) ([]ConversationInfo, error) {
	byID := map[string]ConversationInfo{}
	if l, ok := m.opts.Store.(StoreLister); ok {
		list, err := l.List(ctx, userID)
		if err != nil {
			return nil, fmt.Errorf("list conversations of %s: %w", userID, err)
		}
		for _, ci := range list {
			byID[ci.ConversationID] = ci
		}
	}
	for _, c := range m.ofUser(userID) {
		ci := c.Info()
		if old, ok := byID[ci.ConversationID]; ok && ci.UpdatedAt.IsZero() {
			ci = old // touched but not yet queried in this process
		}
		byID[ci.ConversationID] = ci
	}
	out := make([]ConversationInfo, 0, len(byID))
	for _, ci := range byID {
		out = append(out, ci)
	}
	slices.SortFunc(out, func(a, b ConversationInfo) int {
		if c := b.UpdatedAt.Compare(a.UpdatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ConversationID, b.ConversationID)
	})
	return out, nil
}

// Delete forgets a conversation, and deletes it from the Store when it
// implements [StoreDeleter]. A run in flight finishes on its own, but is not
// saved: the in-memory conversation is marked deleted, so that nothing
// (a run's end, Apply, ApplyUser) writes it back to the Store. Loads of the
// conversation that overlap the Delete fail with an error matching
// [ErrNotFound], so that none brings back the state it read before the
// Store's copy was removed.
func (m *Manager) Delete(ctx context.Context, userID, conversationID string) error {
	k := convKey{userID, conversationID}
	c, p := m.beginDelete(k)
	defer m.endDelete(k, p)
	return m.saver.remove(ctx, c, userID, conversationID)
}

// save writes c's state (and a query's events) to the Store; see saver.
func (m *Manager) save(ctx context.Context, c *Conversation, events []tools.Envelope) error {
	return m.saver.save(ctx, c, events, nil)
}

// saveQuery is save for a query's end: results are the payloads of the
// result events among events, by envelope ID (see
// [ConversationChange.ResultPayloads]).
func (m *Manager) saveQuery(ctx context.Context, c *Conversation, events []tools.Envelope, results map[string]tools.ResultPayload) error {
	return m.saver.save(ctx, c, events, results)
}

// changed counts a change to c that is not saved yet.
func (m *Manager) changed(c *Conversation) { m.saver.changed(c) }
