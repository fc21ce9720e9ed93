package llm

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tmc/langchaingo/llms"
)

// TestOfflineListsEveryServer: asked what it can do, the planner lists
// every server it is offered, not only the first, and answers with each
// server's tools on a line of its own, named as in mcp.json.
func TestOfflineListsEveryServer(t *testing.T) {
	todo, chores := todoServer(t), todoServer(t)
	chores.gateway = "mcp_chores"
	for _, prompt := range []string{"What tools do you have?", "which tools are available", "list your tools", "What can you do?"} {
		t.Run(prompt, func(t *testing.T) {
			calls := simulate(t, prompt, []fakeServer{todo, chores}, 6)
			if diff := cmp.Diff([]call{listCall("mcp_todo"), listCall("mcp_chores")}, calls[:len(calls)-1]); diff != "" {
				t.Errorf("calls mismatch (-want +got):\n%s", diff)
			}
			text, _ := calls[len(calls)-1].Args["text"].(string)
			tools := "create_todo, list_todos, update_todo, search_todos, delete_todo"
			for _, want := range []string{Prefix, "\n- todo (5 tools): " + tools, "\n- chores (5 tools): " + tools} {
				if !strings.Contains(text, want) {
					t.Errorf("answer %q: want %q", text, want)
				}
			}
			if strings.Contains(text, "no tool matched") || strings.Contains(text, "mcp_") {
				t.Errorf("answer %q: want the catalogue by server name, not a miss", text)
			}
		})
	}
}

// TestOfflineListsTheServerNamed: asked for the tools of one server, the
// planner lists that one only; a question about anything else is a task.
func TestOfflineListsTheServerNamed(t *testing.T) {
	todo, chores := todoServer(t), todoServer(t)
	chores.gateway = "mcp_chores"
	calls := simulate(t, "What tools does chores have?", []fakeServer{todo, chores}, 6)
	if diff := cmp.Diff([]call{listCall("mcp_chores")}, calls[:len(calls)-1]); diff != "" {
		t.Errorf("calls mismatch (-want +got):\n%s", diff)
	}
	text, _ := calls[len(calls)-1].Args["text"].(string)
	if !strings.Contains(text, "\n- chores (5 tools): ") || strings.Contains(text, "- todo") {
		t.Errorf("answer %q: want the tools of chores alone", text)
	}
	calls = simulate(t, `use the tool to create a todo titled "milk"`, []fakeServer{todo, chores}, 6)
	if last := calls[len(calls)-2]; last.Args["action"] != "execute" || last.Args["tool_name"] != "create_todo" {
		t.Errorf("a task naming a tool: calls %v; want create_todo run", calls)
	}
}

// TestOfflineNamesServers: the planner's updates name a server as mcp.json
// does ("api-ai"), not by its gateway's tool id (mcp_api_ai).
func TestOfflineNamesServers(t *testing.T) {
	gw := gatewayTool("mcp_api_ai")
	gw.Function.Description = "MCP server 'api-ai' (http) - provides access to multiple tools"
	resp, err := NewOffline().GenerateContent(t.Context(), []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeHuman, `{"user_prompt": "list my todos"}`),
	}, llms.WithTools([]llms.Tool{answerFn, gw}))
	if err != nil {
		t.Fatal(err)
	}
	if c := oneCall(t, resp); c.Name != "mcp_api_ai" {
		t.Fatalf("call %v, want a list of mcp_api_ai", c)
	}
	if got, want := resp.Choices[0].Content, Prefix+" Listing the tools of api-ai to find one for your request."; got != want {
		t.Errorf("update %q, want %q", got, want)
	}
}

// TestCapTextCutsBetweenWords: a long answer is cut at a space, never in
// the middle of a word, and says it was cut.
func TestCapTextCutsBetweenWords(t *testing.T) {
	long := strings.Repeat("todo number something, ", 400)
	got, ok := strings.CutSuffix(capText(long), "… (cut)")
	if !ok || !strings.HasPrefix(long, got) || len([]rune(got)) > maxAnswer || !strings.ContainsAny(long[len(got):len(got)+1], " ,") {
		t.Errorf("capText cut to …%q: want it cut at the end of a word, saying so", got[len(got)-30:])
	}
	if s := strings.Repeat("x", maxAnswer+5); capText(s) != strings.Repeat("x", maxAnswer)+"… (cut)" {
		t.Error("a text without spaces is not cut at maxAnswer")
	}
	if capText("short") != "short" {
		t.Error("a short text was changed")
	}
}
