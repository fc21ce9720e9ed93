package tree

import (
	"sync"

	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/tree/prompt"
)

// Node is a decision node: the model chooses one of its options, in order.
// The root and every branch are Nodes; so is the sub-node that follows a
// chained tool (id "<branch>.<tool>", as in Elysia).
//
// A Node belongs to one [Tree] and is immutable once the tree is shared.
type Node struct {
	id          string
	description string
	instruction string
	// status is the status line shown when the model chooses the node as a
	// branch; "" means none. It is not part of the tree JSON.
	status  string
	options []*option
}

// option is one choice of a node: a tool (tool != nil), optionally followed
// by a sub-node of chained tools, or a branch (tool == nil, next != nil).
type option struct {
	id   string
	tool tools.Tool
	next *Node

	// specOnce computes inputs and schema, what every decision offering
	// the option reads of its tool: once, since a tool's inputs do not
	// change (a changed server comes with a new tree). Both are shared and
	// read-only; withDefaults copies the defaults a call takes. The schema
	// is sealed (tools.Seal): a model client sends its JSON, encoded once.
	specOnce sync.Once
	inputs   []tools.Input
	schema   map[string]any
}

// spec returns the option's inputs and their JSON Schema (a branch has
// none).
func (o *option) spec() ([]tools.Input, map[string]any) {
	o.specOnce.Do(func() {
		if o.tool != nil {
			o.inputs = o.tool.Inputs()
		}
		o.schema = tools.Seal(prompt.InputSchema(o.inputs))
	})
	return o.inputs, o.schema
}

// ID returns the node's id ("base", "mcp", "base.query").
func (n *Node) ID() string { return n.id }

// Description returns the node's description; the root's is "".
func (n *Node) Description() string { return n.description }

// Instruction returns what the decision model is told at this node.
func (n *Node) Instruction() string { return n.instruction }

// Status returns the status line emitted when the model chooses the node as
// a branch (a status event, after its tree_update); "" means none.
func (n *Node) Status() string { return n.status }

// OptionIDs returns the ids of the node's options, in order.
func (n *Node) OptionIDs() []string {
	ids := make([]string, len(n.options))
	for i, o := range n.options {
		ids[i] = o.id
	}
	return ids
}

func (n *Node) option(id string) (int, *option) {
	for i, o := range n.options {
		if o.id == id {
			return i, o
		}
	}
	return -1, nil
}

func (n *Node) removeOption(i int) {
	n.options = append(n.options[:i:i], n.options[i+1:]...)
}

// clone deep-copies the node and its descendants. Tools are shared.
func (n *Node) clone() *Node {
	c := &Node{id: n.id, description: n.description, instruction: n.instruction,
		status: n.status, options: make([]*option, len(n.options))}
	for i, o := range n.options {
		oc := &option{id: o.id, tool: o.tool}
		if o.next != nil {
			oc.next = o.next.clone()
		}
		c.options[i] = oc
	}
	return c
}

// walk calls fn for n and every descendant node, parents first; it stops when
// fn returns false.
func (n *Node) walk(fn func(parent *Node, o *option) bool) bool {
	for _, o := range n.options {
		if !fn(n, o) {
			return false
		}
		if o.next != nil && !o.next.walk(fn) {
			return false
		}
	}
	return true
}

// description of an option as the model and the tree JSON see it.
func (o *option) description() string {
	if o.tool != nil {
		return o.tool.Description()
	}
	return o.next.description
}

// isBranch reports whether o is a branch rather than a tool.
func (o *option) isBranch() bool { return o.tool == nil }
