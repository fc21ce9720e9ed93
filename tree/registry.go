package tree

import (
	"fmt"
	"log/slog"
	"sync/atomic"

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

// snapshot is one generation of the tool configuration: the placements, the
// tools that can be added by name, and the default tree of each init mode.
// It is immutable once published, so readers use it without a lock.
type snapshot struct {
	// gen numbers the snapshots in the order they were published, from 1.
	// A conversation's own tree records the generation it was built on
	// (Conversation.gen) and is rebuilt when an older one is used.
	gen        uint64
	placements []Placement
	tools      map[string]tools.Tool
	oneBranch  *Tree
	multi      *Tree
	empty      *Tree
}

// registry holds the current snapshot. SetTools builds a new one without a
// lock and swaps it in atomically; conversations read it on every use, and
// none is rebuilt at the swap (see Manager.treeOf).
type registry struct {
	logger *slog.Logger
	cur    atomic.Pointer[snapshot]
}

// load returns the current snapshot.
func (r *registry) load() *snapshot { return r.cur.Load() }

// set builds a snapshot of placements, which the caller no longer changes,
// and publishes it with the next generation. Concurrent calls each build
// their own; the one published last is current, and has the highest
// generation.
func (r *registry) set(placements []Placement) {
	s := r.build(placements)
	for {
		cur := r.cur.Load()
		s.gen = 1
		if cur != nil {
			s.gen = cur.gen + 1
		}
		if r.cur.CompareAndSwap(cur, s) {
			return
		}
	}
}

// build returns the snapshot of placements, without a generation.
func (r *registry) build(placements []Placement) *snapshot {
	s := &snapshot{placements: placements, tools: map[string]tools.Tool{
		tools.TextResponseName:   tools.TextResponse(),
		tools.CitedSummarizeName: tools.CitedSummarize(),
	}}
	for _, p := range placements {
		if p.Tool != nil {
			s.tools[p.Tool.Name()] = p.Tool
		}
	}
	// Each placement is made in every mode's tree; a problem with it is
	// logged once, not once per mode.
	warned := map[string]bool{}
	warn := func(msg string, args ...any) {
		if k := msg + fmt.Sprint(args...); !warned[k] {
			warned[k] = true
			r.logger.Warn(msg, args...)
		}
	}
	for _, mode := range []InitMode{OneBranch, MultiBranch, Empty} {
		t, _ := New(mode, r.logger) // known modes never fail
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
		switch mode {
		case OneBranch:
			s.oneBranch = t
		case MultiBranch:
			s.multi = t
		default:
			s.empty = t
		}
	}
	return s
}

// defaultTree returns the shared default tree of mode, a parsed mode.
func (s *snapshot) defaultTree(mode InitMode) *Tree {
	switch mode {
	case MultiBranch:
		return s.multi
	case Empty:
		return s.empty
	}
	return s.oneBranch
}

// replay applies ops to a copy of mode's default tree; ops that no longer
// apply (a tool that is gone) are skipped.
func (s *snapshot) replay(mode InitMode, ops []Op, logger *slog.Logger) *Tree {
	t := s.defaultTree(mode).Clone()
	for _, op := range ops {
		if err := op.apply(t, s.tools); err != nil {
			logger.Debug("skipping tree op on replay", logKeyOp, op.Kind, logKeyErr, err)
		}
	}
	return t
}

// available lists the tools that can be added by name: the built-ins, then
// the gateways in placement order, each name once.
func (s *snapshot) available() []ToolInfo {
	ts := []tools.Tool{s.tools[tools.TextResponseName], s.tools[tools.CitedSummarizeName]}
	for _, p := range s.placements {
		if p.Tool != nil {
			ts = append(ts, p.Tool)
		}
	}
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
