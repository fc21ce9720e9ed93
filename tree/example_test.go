package tree_test

import (
	"context"
	"fmt"

	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/tree"
)

// echo is a minimal tools.Tool standing in for an MCP gateway.
type echo struct{}

func (echo) Name() string { return "mcp_echo" }
func (echo) Description() string {
	return "MCP server 'echo' (stdio) - provides access to multiple tools"
}
func (echo) Inputs() []tools.Input { return nil }
func (echo) EndsRun() bool         { return false }
func (echo) Run(context.Context, tools.Call, tools.Emitter) (tools.Result, error) {
	return tools.Result{}, nil
}

// Example places a gateway in every tree, changes one conversation's tree,
// and prints both as text.
func Example() {
	ctx := context.Background()
	m := tree.NewManager(nil)
	m.SetTools([]tree.Placement{{Tool: echo{}}})

	c, _ := m.Conversation(ctx, "alice", "c1")
	fmt.Print(c.Tree().Text())

	// The change gives c2 its own copy; c1 keeps the shared default tree.
	t2, _ := m.Apply(ctx, "alice", "c2", tree.Op{Kind: tree.OpRemoveTool, ToolName: "cited_summarize"})
	fmt.Println(t2.Root().OptionIDs(), c.Tree().Root().OptionIDs())
	// Output:
	// 📁 base
	//    🔧 text_response
	//       💬 End the conversation by replying to the user. Use this when the user's prompt has been answered, when you have nothing more to do but reply, or for conversational prompts that no other tool covers. Do not use it as a source of information: facts must come from the environment, so call the other tools first when the user asks for something they can find or do. If a task could not be completed, use this to say briefly why.
	//    🔧 cited_summarize
	//       💬 End the conversation by summarising the information retrieved so far, citing the objects it comes from. Use this when the environment holds the results the user asked about and the answer should be grounded in them. Cite each object you use by its _REF_ID in square brackets, e.g. [mcp_todo_list_0_0], right after the sentence that uses it. Cite only ids that appear in the environment.
	//    🔧 mcp_echo
	//       💬 MCP server 'echo' (stdio) - provides access to multiple tools
	// [text_response mcp_echo] [text_response cited_summarize mcp_echo]
}
