package tools_test

import (
	"context"
	"fmt"

	"github.com/elysia-go/elysia/tools"
)

// ExampleCitedSummarize shows cited_summarize checking its citations against
// the environment.
func ExampleCitedSummarize() {
	var env tools.Environment
	env.Add("mcp_todo", "list_todos", []map[string]any{{"title": "Buy milk"}}, nil)

	emit := tools.EmitterFunc(func(ev tools.Event) {
		obj := ev.Payload.(tools.TextPayload).Objects[0]
		fmt.Println(obj["text"], obj["ref_ids"])
	})
	tool := tools.CitedSummarize()
	ctx := context.Background()
	_, _ = tool.Run(ctx, tools.Call{Env: &env,
		Args: map[string]any{"text": "You need milk [mcp_todo_list_todos_0_0]."}}, emit)
	res, _ := tool.Run(ctx, tools.Call{Env: &env,
		Args: map[string]any{"text": "And eggs [mcp_todo_list_todos_1_0]."}}, emit)
	fmt.Println(res.Error)
	// Output:
	// You need milk [mcp_todo_list_todos_0_0]. [mcp_todo_list_todos_0_0]
	// cited_summarize cites unknown _REF_IDs: mcp_todo_list_todos_1_0
}
