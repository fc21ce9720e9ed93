package tree

import (
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"

	"github.com/elysia-go/elysia/tools"
)

// InitMode names how a tree is initialised (Elysia's branch_initialisation).
type InitMode string

// The initialisation modes. The zero value means [OneBranch].
const (
	// OneBranch: root "base" with text_response, cited_summarize, then the
	// gateways in file order.
	OneBranch InitMode = "one_branch"
	// MultiBranch: root "base" with text_response, cited_summarize and a
	// branch "mcp" that holds the gateways.
	MultiBranch InitMode = "multi_branch"
	// Empty: root "base" with only the gateways. A forced text answer still
	// ends every run.
	Empty InitMode = "empty"
)

// Fixed ids and texts of the trees every mode builds.
const (
	RootID = "base"
	// MCPBranchID is the branch that holds the gateways in [MultiBranch].
	MCPBranchID = "mcp"

	rootInstruction = "Choose a base-level task based on the user's prompt and available " +
		"information. Decide based on the tools you have available as well as their " +
		"descriptions. Read them thoroughly and match the actions to the user prompt."
	mcpBranchDescription = "Use tools provided by MCP servers"
	mcpBranchInstruction = "Choose the MCP server whose tools match the user's prompt. " +
		"List a server's tools before executing one of them."
	chainInstruction  = "Choose one of the actions based on their descriptions and the user prompt."
	branchInstruction = "Choose one of the options based on their descriptions and the user prompt."
)

// ParseInitMode returns the mode named s; "" and "default" mean [OneBranch].
// An unknown name is an error matching [ErrInvalid].
func ParseInitMode(s string) (InitMode, error) {
	switch InitMode(s) {
	case "", "default", OneBranch:
		return OneBranch, nil
	case MultiBranch, Empty:
		return InitMode(s), nil
	}
	return "", fmt.Errorf("init mode %q (want one_branch, multi_branch or empty): %w", s, ErrInvalid)
}

// Tree is a decision tree: a root [Node] whose options are tools and
// branches. The zero value is not usable; build one with [New].
//
// A Tree has no lock. Its methods that change it (AddTool, RemoveTool,
// AddBranch, RemoveBranch) must not run concurrently with any other method.
// Trees handed out by a [Manager] or a [Conversation] are shared by many
// conversations and must not be changed: [Tree.Clone] them first.
type Tree struct {
	root   *Node
	mode   InitMode
	logger *slog.Logger
	// rendered caches the tree's JSON; see MarshalJSON. The methods that
	// change the tree clear it.
	rendered atomic.Pointer[rendering]
}

// New returns a tree initialised for mode, holding the built-in tools but no
// gateway. logger receives the warnings of later operations; nil discards
// them. An unknown mode is an error matching [ErrInvalid].
func New(mode InitMode, logger *slog.Logger) (*Tree, error) {
	mode, err := ParseInitMode(string(mode))
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	t := &Tree{mode: mode, logger: logger,
		root: &Node{id: RootID, instruction: rootInstruction}}
	if mode == Empty {
		return t, nil
	}
	t.root.options = append(t.root.options,
		&option{id: tools.TextResponseName, tool: tools.TextResponse()},
		&option{id: tools.CitedSummarizeName, tool: tools.CitedSummarize()})
	if mode == MultiBranch {
		t.root.options = append(t.root.options, &option{id: MCPBranchID,
			next: &Node{id: MCPBranchID, description: mcpBranchDescription, instruction: mcpBranchInstruction}})
	}
	return t, nil
}

// Mode returns the mode the tree was initialised with.
func (t *Tree) Mode() InitMode { return t.mode }

// Root returns the root node.
func (t *Tree) Root() *Node { return t.root }

// Clone returns a deep copy of the tree's structure; tools are shared.
func (t *Tree) Clone() *Tree {
	return &Tree{root: t.root.clone(), mode: t.mode, logger: t.logger}
}

// Node returns the node with the given id: the root, a branch or a chained
// tool's sub-node.
func (t *Tree) Node(id string) (*Node, bool) {
	if id == t.root.id {
		return t.root, true
	}
	var found *Node
	t.root.walk(func(_ *Node, o *option) bool {
		if o.next != nil && o.next.id == id {
			found = o.next
			return false
		}
		return true
	})
	return found, found != nil
}

// Tool returns the tool with the given name, wherever it sits in the tree.
func (t *Tree) Tool(name string) (tools.Tool, bool) {
	_, o := t.findTool(name)
	if o == nil {
		return nil, false
	}
	return o.tool, true
}

// Tools returns every tool in the tree, depth first in option order.
func (t *Tree) Tools() []tools.Tool {
	var out []tools.Tool
	t.root.walk(func(_ *Node, o *option) bool {
		if o.tool != nil {
			out = append(out, o.tool)
		}
		return true
	})
	return out
}

func (t *Tree) findTool(name string) (parent *Node, opt *option) {
	t.root.walk(func(p *Node, o *option) bool {
		if o.tool != nil && o.id == name {
			parent, opt = p, o
			return false
		}
		return true
	})
	return parent, opt
}

// resolve returns the node that branchID (or the root) and the chain of
// fromToolIDs lead to. With create, the last tool's sub-node is created when
// missing.
func (t *Tree) resolve(branchID string, fromToolIDs []string, root, create bool) (*Node, error) {
	if root {
		if branchID != "" && branchID != t.root.id {
			t.logger.Warn("root is set: branch_id ignored", "branch", branchID)
		}
		branchID = t.root.id
	}
	if branchID == "" {
		branchID = t.root.id
	}
	n, ok := t.Node(branchID)
	if !ok {
		return nil, fmt.Errorf("branch %q: %w", branchID, ErrNotFound)
	}
	chain := branchID
	for _, from := range fromToolIDs {
		_, o := n.option(from)
		if o == nil || o.tool == nil {
			return nil, fmt.Errorf("tool %q in node %q (options: %s): %w",
				from, n.id, strings.Join(n.OptionIDs(), ", "), ErrNotFound)
		}
		chain += "." + from
		if o.next == nil {
			if !create {
				return nil, fmt.Errorf("no tool follows %q: %w", chain, ErrNotFound)
			}
			o.next = &Node{id: chain, instruction: chainInstruction}
		}
		n = o.next
	}
	return n, nil
}

// AddTool adds tool as the last option of the branch branchID ("" or root:
// the root). With fromToolIDs, the tool is placed after that chain of tools
// instead: as in Elysia, the last tool of the chain gets a sub-node with id
// "<branch>.<from1>.<from2>..." that holds the new tool, so the model may
// choose it after running the chain. Tool names are unique in a tree: a taken
// name is an error matching [ErrExists]; an unknown branch or chained tool
// one matching [ErrNotFound].
func (t *Tree) AddTool(tool tools.Tool, branchID string, fromToolIDs []string, root bool) error {
	t.rendered.Store(nil)
	if tool == nil {
		return fmt.Errorf("add nil tool: %w", ErrInvalid)
	}
	name := tool.Name()
	if at, o := t.findTool(name); o != nil {
		// Adding a tool where it already is changes nothing, and says so
		// by succeeding: the request is idempotent (DESIGN.md's example
		// adds mcp_todo to base, where discovery has put it already).
		if n, err := t.resolve(branchID, fromToolIDs, root, false); err == nil && n == at {
			return nil
		}
		return fmt.Errorf("tool %q is already in node %q: %w", name, at.id, ErrExists)
	}
	if _, ok := t.Node(name); ok {
		return fmt.Errorf("tool %q takes a branch id: %w", name, ErrExists)
	}
	n, err := t.resolve(branchID, fromToolIDs, root, true)
	if err != nil {
		t.pruneEmptyChains() // a chain that failed half-way
		return err
	}
	n.options = append(n.options, &option{id: name, tool: tool})
	return nil
}

// RemoveTool removes the tool name from the branch branchID ("" or root: the
// root), after the chain fromToolIDs if given. A sub-node left empty goes
// with it, and so do the tools chained after the removed one.
func (t *Tree) RemoveTool(name, branchID string, fromToolIDs []string, root bool) error {
	t.rendered.Store(nil)
	n, err := t.resolve(branchID, fromToolIDs, root, false)
	if err != nil {
		return err
	}
	i, o := n.option(name)
	if o == nil || o.tool == nil {
		return fmt.Errorf("tool %q in node %q (options: %s): %w",
			name, n.id, strings.Join(n.OptionIDs(), ", "), ErrNotFound)
	}
	n.removeOption(i)
	t.pruneEmptyChains()
	return nil
}

// removeToolAnywhere removes the tool name wherever it is; it reports whether
// it was found.
func (t *Tree) removeToolAnywhere(name string) bool {
	p, o := t.findTool(name)
	if o == nil {
		return false
	}
	i, _ := p.option(name)
	p.removeOption(i)
	t.pruneEmptyChains()
	return true
}

// pruneEmptyChains drops tool sub-nodes that hold no option any more.
func (t *Tree) pruneEmptyChains() {
	t.root.walk(func(_ *Node, o *option) bool {
		if o.tool != nil && o.next != nil && len(o.next.options) == 0 {
			o.next = nil
		}
		return true
	})
}

// AddBranch adds a branch (a nested decision node) as the last option of
// parentID ("" or root: the root). An empty instruction gets a generic one.
// The id must not be taken by another node or tool ([ErrExists]).
func (t *Tree) AddBranch(id, description, instruction, parentID string, root bool) error {
	return t.addBranch(id, description, instruction, "", parentID, root)
}

// addBranch is AddBranch with the status line the branch shows when chosen.
func (t *Tree) addBranch(id, description, instruction, status, parentID string, root bool) error {
	t.rendered.Store(nil)
	if id == "" {
		return fmt.Errorf("branch with empty id: %w", ErrInvalid)
	}
	if _, ok := t.Node(id); ok {
		return fmt.Errorf("branch %q: %w", id, ErrExists)
	}
	if _, o := t.findTool(id); o != nil {
		return fmt.Errorf("branch %q takes a tool name: %w", id, ErrExists)
	}
	parent, err := t.resolve(parentID, nil, root, false)
	if err != nil {
		return err
	}
	if instruction == "" {
		instruction = branchInstruction
	}
	parent.options = append(parent.options, &option{id: id,
		next: &Node{id: id, description: description, instruction: instruction, status: status}})
	return nil
}

// RemoveBranch removes the branch id and everything under it. The root
// cannot be removed ([ErrInvalid]).
func (t *Tree) RemoveBranch(id string) error {
	t.rendered.Store(nil)
	if id == t.root.id {
		return fmt.Errorf("remove root branch %q: %w", id, ErrInvalid)
	}
	var parent *Node
	t.root.walk(func(p *Node, o *option) bool {
		if o.isBranch() && o.id == id {
			parent = p
			return false
		}
		return true
	})
	if parent == nil {
		return fmt.Errorf("branch %q: %w", id, ErrNotFound)
	}
	i, _ := parent.option(id)
	parent.removeOption(i)
	return nil
}

// place adds a gateway to branch ("" means the root). A tool of the same
// name is replaced, in place when it sits on the same node; a branch that
// does not exist is created under the root. Both are reported to warn (nil:
// the tree's logger), which lets the Manager log them once for all modes.
func (t *Tree) place(tool tools.Tool, branch string, warn func(msg string, args ...any)) {
	t.rendered.Store(nil)
	if warn == nil {
		warn = t.logger.Warn
	}
	name := tool.Name()
	if branch == "" {
		branch = t.root.id
	}
	n, ok := t.Node(branch)
	if !ok {
		warn("branch does not exist: creating it under the root", "branch", branch, "tool", name)
		n = &Node{id: branch, description: "Tools on branch " + branch, instruction: branchInstruction}
		t.root.options = append(t.root.options, &option{id: branch, next: n})
	}
	if p, o := t.findTool(name); o != nil {
		warn("gateway replaces the tool of the same name", "tool", name)
		if p == n {
			o.tool = tool
			return
		}
		t.removeToolAnywhere(name)
	}
	n.options = append(n.options, &option{id: name, tool: tool})
}
