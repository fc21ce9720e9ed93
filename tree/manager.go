package tree

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
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
// the registry of tools that can be added by name, and the conversations,
// keyed by user and conversation id.
//
// A Manager is safe for concurrent use. Lock order: a user's token (see
// ApplyUser), then a Conversation's saving token, then Manager.mu, then the
// Conversation's mu. The two mutexes are never held across I/O, a model or
// tool call, or an emit; the tokens exist to order Store calls and are held
// across them.
type Manager struct {
	opts   Options
	logger *slog.Logger
	slack  uint64 // see lruSlack

	// mu guards placements, registry, defaults, convs, lru, userOps,
	// userLocks, pending, and the fields of every Conversation that say so.
	mu         sync.Mutex
	placements []Placement
	registry   map[string]tools.Tool
	defaults   map[InitMode]*Tree
	convs      map[convKey]*Conversation
	// lru orders convs by use when the Manager bounds them (see bounded).
	lru lruList
	// userOps are each user's own tree changes (see ApplyUser), loaded from
	// the Store on first use; a nil entry means the user has none.
	userOps map[string][]Op
	// userLocks holds a one-slot channel per user that has called
	// ApplyUser: a token that orders the user's changes and their saves.
	userLocks map[string]chan struct{}
	// pending holds the keys with loads from the Store or Deletes in
	// flight; see load.
	pending map[convKey]*pending
}

type convKey struct{ user, conv string }

// pending records the loads and Deletes of one conversation that are in
// flight. A load may read the saved state before a Delete removes it and
// finish after the Delete: whatever it read then belongs to a deleted
// conversation and must not be put in Manager.convs. So a Delete marks the
// loads in flight, and the loads that start before it has removed the
// conversation from the Store, as deleted. Likewise, a load may read the
// saved state, then another load insert the conversation, which changes,
// is saved and is dropped from memory (evicted or forgotten) before the
// first load finishes: the drop marks the first load, which loads again.
// The entry leaves Manager.pending when neither a load nor a Delete of the
// key is in flight, or when the conversation is dropped.
type pending struct {
	loads   int  // loads in flight
	deletes int  // Deletes in flight
	deleted bool // a Delete overlapped the loads
	dropped bool // the conversation was dropped from memory during the loads
}

// NewManager returns a Manager with the built-in tools and no gateway. It does
// no I/O; call [Manager.SetTools] to place gateways.
func NewManager(opts *Options) *Manager {
	m := &Manager{convs: map[convKey]*Conversation{}, userOps: map[string][]Op{},
		userLocks: map[string]chan struct{}{}, pending: map[convKey]*pending{}}
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
	m.slack = m.lruSlack()
	m.logger = o.Logger
	if m.logger == nil {
		m.logger = slog.New(slog.DiscardHandler)
	}
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

// Conversation returns the conversation (userID, conversationID), creating
// it with the default tree, or loading it from the Store on first touch.
func (m *Manager) Conversation(ctx context.Context, userID, conversationID string) (*Conversation, error) {
	c, _, err := m.load(ctx, userID, conversationID, true)
	return c, err
}

// load returns the conversation from memory, or loads it from the Store;
// when it exists in neither, it creates it if create is set and otherwise
// returns ok false. A load that overlaps a Delete of the conversation fails
// with errDeleted rather than bring it back; one that overlaps a drop from
// memory loads again (see pending).
func (m *Manager) load(ctx context.Context, userID, conversationID string, create bool) (c *Conversation, ok bool, err error) {
	k := convKey{userID, conversationID}
	for {
		m.mu.Lock()
		c = m.convs[k]
		var p *pending
		if c != nil {
			m.usedLocked(c)
		} else {
			p = m.pendingLocked(k)
			p.loads++
		}
		m.mu.Unlock()
		if c != nil {
			return c, true, nil
		}
		var st ConversationState
		var found bool
		var userOps []Op
		st, found, userOps, err = m.fetch(ctx, userID, conversationID, create)
		m.mu.Lock()
		p.loads--
		m.releaseLocked(k, p)
		c = m.convs[k]
		switch {
		case err != nil:
			c = nil
		case c != nil:
			m.usedLocked(c) // another caller got there first
			ok = true
		case p.deleted:
			err = fmt.Errorf("load conversation %s/%s: %w", userID, conversationID, errDeleted)
		case p.dropped:
			m.mu.Unlock()
			continue // what was read may be older than what was saved since
		case found || create:
			c, ok = m.insertLocked(k, found, st, userOps), true
			if !found {
				// A new conversation exists from now on (GET /tree
				// "creates the conversation"): saved, so it is listed
				// and survives a restart like any other.
				c.changes++
				m.mu.Unlock()
				m.saveNew(ctx, c)
				return c, true, nil
			}
		}
		m.mu.Unlock()
		return c, ok, err
	}
}

// saveNew saves a conversation just created. A failure is logged, not
// returned: the conversation is usable in memory, is kept there while
// unsaved, and its next change saves it again.
func (m *Manager) saveNew(ctx context.Context, c *Conversation) {
	if err := m.save(ctx, c, nil); err != nil {
		m.logger.WarnContext(ctx, "save new conversation", "user", c.userID, "conversation", c.id, "err", err)
	}
}

// insertLocked puts conversation k in memory, restored from st when found
// and otherwise new, with userOps; m.mu is held.
func (m *Manager) insertLocked(k convKey, found bool, st ConversationState, userOps []Op) *Conversation {
	c := newConversation(m, k.user, k.conv, m.opts.DefaultMode)
	if found {
		c.restoreLocked(st)
	} else {
		c.updated = time.Now().UTC() // created now; c is not shared yet
		if len(userOps) > 0 {
			c.ops = slices.Clone(userOps)
			c.tree = m.replayLocked(c.mode, c.ops)
		}
	}
	m.convs[k] = c
	if m.bounded() {
		c.movedAt = m.lru.pushFront(c)
		m.evictLocked(c)
	}
	return c
}

// fetch reads what load needs from the Store: the saved state, if found,
// and otherwise, when create is set, the user's own ops.
func (m *Manager) fetch(ctx context.Context, userID, conversationID string, create bool) (st ConversationState, found bool, userOps []Op, err error) {
	if m.opts.Store != nil {
		st, found, err = m.opts.Store.Load(ctx, userID, conversationID)
		if err != nil {
			return st, false, nil, fmt.Errorf("load conversation %s/%s: %w", userID, conversationID, err)
		}
	}
	if !found && create {
		if userOps, err = m.userOpsOf(ctx, userID); err != nil {
			return st, false, nil, err
		}
	}
	return st, found, userOps, nil
}

// pendingLocked returns the pending entry of k, adding it when missing.
func (m *Manager) pendingLocked(k convKey) *pending {
	p := m.pending[k]
	if p == nil {
		p = &pending{}
		m.pending[k] = p
	}
	return p
}

// releaseLocked drops k's pending entry p once nothing is in flight.
func (m *Manager) releaseLocked(k convKey, p *pending) {
	if p.loads == 0 && p.deletes == 0 && m.pending[k] == p {
		delete(m.pending, k)
	}
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

// lockCurrent locks m.mu and returns the Manager's copy of c: c, or, when
// c was dropped from memory (evicted or forgotten) after it was looked up,
// the copy loaded again, so that a change is never made to a dropped copy
// that the Store's is newer than. It fails with errDeleted, m.mu unlocked,
// when the conversation was deleted.
func (m *Manager) lockCurrent(ctx context.Context, c *Conversation, what string) (*Conversation, error) {
	for {
		m.mu.Lock()
		if c.deleted {
			m.mu.Unlock()
			return nil, fmt.Errorf("%s conversation %s/%s: %w", what, c.userID, c.id, errDeleted)
		}
		if m.convs[convKey{c.userID, c.id}] == c {
			return c, nil
		}
		m.mu.Unlock()
		next, err := m.reload(ctx, c, what)
		if err != nil {
			return nil, err
		}
		c = next
	}
}

// reload returns the conversation that replaces c, a copy dropped from
// memory (evicted or forgotten), loading it from the Store if need be. It
// never creates one: a copy is dropped only once everything in it is
// saved, so a conversation the Store no longer has was deleted, and
// creating it again would bring a deleted conversation back.
func (m *Manager) reload(ctx context.Context, c *Conversation, what string) (*Conversation, error) {
	next, ok, err := m.load(ctx, c.userID, c.id, false)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%s conversation %s/%s: %w", what, c.userID, c.id, errDeleted)
	}
	return next, nil
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
	m.mu.Lock()
	var mine []*Conversation
	for k, c := range m.convs {
		if k.user == userID {
			mine = append(mine, c)
		}
	}
	m.mu.Unlock()
	for _, c := range mine {
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
	m.mu.Lock()
	c := m.convs[k]
	delete(m.convs, k)
	if c != nil {
		c.deleted = true
		m.lru.remove(c)
	}
	p := m.pendingLocked(k)
	p.deletes++
	p.deleted = true
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		p.deletes--
		if p.deletes == 0 && m.pending[k] == p {
			// Loads that start from now on read the Store after the row
			// is gone.
			delete(m.pending, k)
		}
		m.mu.Unlock()
	}()
	d, ok := m.opts.Store.(StoreDeleter)
	if !ok {
		return nil
	}
	if c != nil {
		// A save that started before c was marked ends before the row is
		// deleted; any later one sees the mark and skips.
		if err := lock(ctx, c.saving); err != nil {
			return fmt.Errorf("delete conversation %s/%s: %w", userID, conversationID, err)
		}
		defer func() { <-c.saving }()
	}
	if err := d.Delete(ctx, userID, conversationID); err != nil {
		return fmt.Errorf("delete conversation %s/%s: %w", userID, conversationID, err)
	}
	return nil
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

// save writes c's state (and a query's events) to the Store, if any, unless
// c was deleted. c's saving token is held from reading the state until the
// Store has it, so that saves of c land in the order their states were
// read: the last save writes the newest state.
func (m *Manager) save(ctx context.Context, c *Conversation, events []tools.Envelope) error {
	if m.opts.Store == nil {
		return nil
	}
	if err := lock(ctx, c.saving); err != nil {
		return fmt.Errorf("save conversation %s/%s: %w", c.userID, c.id, err)
	}
	defer func() { <-c.saving }()
	m.mu.Lock()
	deleted, changes := c.deleted, c.changes
	m.mu.Unlock()
	if deleted {
		return nil
	}
	st := c.State()
	if err := m.opts.Store.Save(ctx, st, events); err != nil {
		return fmt.Errorf("save conversation %s/%s: %w", c.userID, c.id, err)
	}
	m.mu.Lock()
	// st holds at least the changes counted before it was read.
	c.saved = max(c.saved, changes)
	m.mu.Unlock()
	return nil
}

// changed counts a change to c that is not saved yet.
func (m *Manager) changed(c *Conversation) {
	m.mu.Lock()
	c.changes++
	m.mu.Unlock()
}

// lock takes the token of tok, a one-slot channel used as a lock that may
// be held across a Store call, or gives up when ctx ends.
func lock(ctx context.Context, tok chan struct{}) error {
	select {
	case tok <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
