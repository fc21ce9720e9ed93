package tree

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/elysia-go/elysia/tools"
)

// Placement puts a gateway (any tools.Tool) on a branch of every tree.
type Placement struct {
	Tool tools.Tool
	// Branch is the node to place the tool on. Empty means the root, or the
	// "mcp" branch in [MultiBranch] trees. A branch that does not exist is
	// created under the root, with a warning.
	Branch string
}

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
	// MaxConversations bounds the conversations kept in memory when Store
	// is set. Over it, the least recently used idle ones (no query
	// running, every change saved) are dropped from memory, and loaded
	// again from the Store when next used. Zero: 50,000; negative: no
	// bound. Without a Store, nothing is dropped.
	MaxConversations int
	// Store loads and saves conversations. Nil: memory only.
	Store Store
	// Logger receives warnings and per-step debug logs. Nil: discarded.
	Logger *slog.Logger
}

// Manager owns the gateway placements, the default tree of each init mode
// (immutable, shared by every conversation that has not changed its tree),
// the registry of tools that can be added by name, and, through the parts
// it is made of, the conversations: the cache of those in memory (cache.go,
// lru.go), the saver that orders their Store calls (saver.go), and each
// user's own tree changes (userops.go).
//
// A Manager is safe for concurrent use. Lock order: a user's token (see
// ApplyUser), then a Conversation's saving token, then Manager.mu (the
// cache's mu), then the Conversation's mu; users.mu is taken alone. The
// mutexes are never held across I/O, a model or tool call, or an emit; the
// tokens exist to order Store calls and are held across them.
type Manager struct {
	opts   Options
	logger *slog.Logger
	// cache is embedded: its mu, convs, lru and pending are the Manager's,
	// which Conversation and the decision loop lock and read as m.mu and
	// m.convs. mu also guards placements, registry and defaults.
	cache
	placements []Placement
	registry   map[string]tools.Tool
	defaults   map[InitMode]*Tree
	saver      saver
	users      users
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
		o.MaxPromptEnvironment = defaultMaxPromptEnvironment
	}
	m.logger = o.Logger
	if m.logger == nil {
		m.logger = slog.New(slog.DiscardHandler)
	}
	bound := 0 // without a Store, memory is the only copy
	if o.Store != nil && o.MaxConversations > 0 {
		bound = o.MaxConversations
	}
	m.cache.init(bound)
	m.saver = saver{store: o.Store, cache: &m.cache}
	m.users.ops = map[string][]Op{}
	m.users.locks = map[string]chan struct{}{}
	m.mu.Lock()
	m.rebuildLocked(nil)
	m.mu.Unlock()
	return m
}

// SetTools replaces the gateway placements, in config file order: new
// gateways are added to every tree, gone ones removed, changed ones (a new
// Tool value under the same name) replaced. Default trees are rebuilt; every
// conversation that changed its tree gets the new default with its ops
// replayed. Runs in flight keep the tree they started with.
func (m *Manager) SetTools(placements []Placement) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rebuildLocked(slices.Clone(placements))
}

func (m *Manager) rebuildLocked(placements []Placement) {
	m.placements = placements
	m.registry = map[string]tools.Tool{
		tools.TextResponseName:   tools.TextResponse(),
		tools.CitedSummarizeName: tools.CitedSummarize(),
	}
	for _, p := range placements {
		if p.Tool != nil {
			m.registry[p.Tool.Name()] = p.Tool
		}
	}
	m.defaults = make(map[InitMode]*Tree, 3)
	// Each placement is made in every mode's tree; a problem with it is
	// logged once, not once per mode.
	warned := map[string]bool{}
	warn := func(msg string, args ...any) {
		if k := msg + fmt.Sprint(args...); !warned[k] {
			warned[k] = true
			m.logger.Warn(msg, args...)
		}
	}
	for _, mode := range []InitMode{OneBranch, MultiBranch, Empty} {
		t, _ := New(mode, m.logger) // known modes never fail
		for _, p := range placements {
			if p.Tool == nil {
				continue
			}
			branch := p.Branch
			if branch == "" && mode == MultiBranch {
				branch = MCPBranchID
			}
			t.place(p.Tool, branch, warn)
		}
		m.defaults[mode] = t
	}
	for _, c := range m.convs {
		if len(c.ops) > 0 {
			c.tree = m.replayLocked(c.mode, c.ops)
		}
	}
}

// replayLocked applies ops to a copy of mode's default tree; ops that no
// longer apply (a tool that is gone) are skipped.
func (m *Manager) replayLocked(mode InitMode, ops []Op) *Tree {
	t := m.defaults[mode].Clone()
	for _, op := range ops {
		if err := op.apply(t, m.registry); err != nil {
			m.logger.Debug("skipping tree op on replay", "op", op.Kind, "err", err)
		}
	}
	return t
}

// DefaultTree returns the shared default tree of mode ("" means the
// Manager's default mode). The tree must not be changed.
func (m *Manager) DefaultTree(mode InitMode) (*Tree, error) {
	mode, err := m.mode(mode)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.defaults[mode], nil
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
	m.mu.Lock()
	ts := []tools.Tool{m.registry[tools.TextResponseName], m.registry[tools.CitedSummarizeName]}
	for _, p := range m.placements {
		if p.Tool != nil {
			ts = append(ts, p.Tool)
		}
	}
	m.mu.Unlock()
	out := make([]ToolInfo, 0, len(ts))
	seen := map[string]bool{}
	for _, t := range ts {
		if !seen[t.Name()] {
			seen[t.Name()] = true
			out = append(out, toolInfo(t))
		}
	}
	return out
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
	c.mode, c.tree, c.ops = mode, nil, nil
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
func (m *Manager) applyTo(ctx context.Context, c *Conversation, op Op) (*Tree, error) {
	c, err := m.lockCurrent(ctx, c, "apply "+string(op.Kind)+" to")
	if err != nil {
		return nil, err
	}
	base := c.tree
	if base == nil {
		base = m.defaults[c.mode]
	}
	t := base.Clone()
	if err := op.apply(t, m.registry); err != nil {
		m.mu.Unlock()
		return nil, err
	}
	c.tree = t
	c.ops = append(slices.Clip(c.ops), op)
	c.changes++
	m.mu.Unlock()
	return t, m.save(ctx, c, nil)
}

// treeOf returns the tree c runs on now.
func (m *Manager) treeOf(c *Conversation) *Tree {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c.tree != nil {
		return c.tree
	}
	return m.defaults[c.mode]
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
	return m.saver.save(ctx, c, events)
}

// changed counts a change to c that is not saved yet.
func (m *Manager) changed(c *Conversation) { m.saver.changed(c) }
