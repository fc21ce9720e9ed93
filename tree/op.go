package tree

import (
	"bytes"
	"fmt"

	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/tree/prompt"
)

// OpKind names a change made to a conversation's tree through the API.
type OpKind string

// The operations of POST /tools/:user_id/add|remove|add_branch|remove_branch.
const (
	OpAddTool      OpKind = "add_tool"
	OpRemoveTool   OpKind = "remove_tool"
	OpAddBranch    OpKind = "add_branch"
	OpRemoveBranch OpKind = "remove_branch"
)

// Op is one change to a conversation's tree. Ops are recorded in order and
// saved with the conversation, so they can be replayed onto a fresh default
// tree after a restart or a config reload. Tools are named, not held: an Op
// that names a tool no longer configured is skipped on replay.
type Op struct {
	Kind OpKind `json:"kind"`
	// ToolName is the tool to add or remove (tool ops).
	ToolName string `json:"tool_name,omitempty"`
	// BranchID is the branch the tool goes to or leaves ("" means the root),
	// or the branch to add or remove (branch ops).
	BranchID string `json:"branch_id,omitempty"`
	// FromToolIDs chains a tool after other tools (tool ops).
	FromToolIDs []string `json:"from_tool_ids,omitempty"`
	// Root places the tool or the new branch on the root, ignoring BranchID
	// for tools and FromBranchID for branches.
	Root bool `json:"root,omitempty"`
	// Description and Instruction describe a new branch.
	Description string `json:"description,omitempty"`
	Instruction string `json:"instruction,omitempty"`
	// FromBranchID is the parent of a new branch ("" means the root).
	FromBranchID string `json:"from_branch_id,omitempty"`
	// Status is the status line a new branch shows when the model chooses
	// it ("" means none). It is saved with the op, not in the tree JSON.
	Status string `json:"status,omitempty"`
}

// apply performs op on t, looking tools up in registry.
func (op Op) apply(t *Tree, registry map[string]tools.Tool) error {
	switch op.Kind {
	case OpAddTool:
		tool, ok := registry[op.ToolName]
		if !ok {
			return fmt.Errorf("tool %q is not available: %w", op.ToolName, ErrNotFound)
		}
		return t.AddTool(tool, op.BranchID, op.FromToolIDs, op.Root)
	case OpRemoveTool:
		return t.RemoveTool(op.ToolName, op.BranchID, op.FromToolIDs, op.Root)
	case OpAddBranch:
		return t.addBranch(op.BranchID, op.Description, op.Instruction, op.Status, op.FromBranchID, op.Root)
	case OpRemoveBranch:
		return t.RemoveBranch(op.BranchID)
	}
	return fmt.Errorf("op kind %q: %w", op.Kind, ErrInvalid)
}

// ToolInfo describes a tool that can be added to a tree, for GET
// /tools/available.
type ToolInfo struct {
	Name        string
	Description string
	Inputs      []tools.Input
	End         bool
}

// MarshalJSON writes {"name", "description", "inputs", "end"}, with inputs
// keyed by name in the tool's order.
func (ti ToolInfo) MarshalJSON() ([]byte, error) {
	in, err := prompt.Inputs(ti.Inputs).MarshalJSON()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(`{"name":`)
	tools.WriteJSONString(&b, ti.Name)
	b.WriteString(`,"description":`)
	tools.WriteJSONString(&b, ti.Description)
	b.WriteString(`,"inputs":`)
	b.Write(in)
	end, _ := tools.Marshal(ti.End)
	b.WriteString(`,"end":`)
	b.Write(end)
	b.WriteByte('}')
	return b.Bytes(), nil
}

func toolInfo(t tools.Tool) ToolInfo {
	return ToolInfo{Name: t.Name(), Description: t.Description(), Inputs: t.Inputs(), End: t.EndsRun()}
}
