package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// options is a JavaScript expression for the values a text input's
// suggestion list (its datalist) offers, joined by commas.
func options(input string) string {
	return `[...(document.querySelector(` + jsQuote(input) + `)?.list?.options ?? [])].map((o) => o.value).join(",")`
}

// TestBrowserPromptToChat fills server-everything's completable-prompt in
// the gateway panel with the server's suggestions (completion/complete:
// the department's as typed, the name's from the chosen department), gets
// it (the form and the result in view), and puts it into the chat's query box, which sends it as a query. A
// resource template's variable gets the server's suggestions too. axe-core
// finds nothing serious on the prompt view.
func TestBrowserPromptToChat(t *testing.T) {
	llm := newFakeLLM(t, answer("Alice is now head of Engineering."))
	s := everythingService(t, llm)
	b := newBrowserWith(t, 2*browserTimeout, noEmojiFonts(t))
	openEverythingPage(b, s, "alice")

	// 1. The prompt's arguments: suggestions as the user types.
	const dept, name = `#prompt-form [name="department"]`, `#prompt-form [name="name"]`
	b.do("open completable-prompt",
		chromedp.Click(css(`#tree .node[data-id="mcp_everything"] > .row .label`)),
		clickNode(`#tab-prompts`),
		chromedp.WaitVisible(css(`#prompt-list li[data-prompt="completable-prompt"] button.open`)),
		clickNode(`#prompt-list li[data-prompt="completable-prompt"] button.open`),
		chromedp.WaitVisible(css(dept)),
		waitJS(inView+`(document.querySelector("#prompt-form"))`),
		chromedp.SendKeys(css(dept), "S"),
		waitJS(options(dept)+` === "Sales,Support"`),
	)
	b.do("choose a department, then a name from it",
		retype(dept, "Engineering"),
		chromedp.Focus(css(name)),
		waitJS(options(name)+` === "Alice,Bob,Charlie"`),
		chromedp.SendKeys(css(name), "A"),
		waitJS(options(name)+` === "Alice"`),
		chromedp.SendKeys(css(name), "lice"),
		clickNode(`#prompt-form-submit`),
		waitJS(`document.querySelector("#prompt-result").dataset.state === "ok"`),
		chromedp.WaitVisible(css(`#prompt-to-chat`)),
		waitJS(inView+`(document.querySelector("#prompt-result"))`),
	)
	if verbs := eval[string](b, "verbs", `document.querySelector('#prompt-list li[data-prompt="completable-prompt"] button.open').textContent + "/" + document.querySelector("#prompt-form-submit").textContent`); verbs != "Get/Get prompt" {
		t.Errorf("the prompt's button and its form's say %q; want one verb, Get", verbs)
	}
	for _, v := range axeViolations(b, axeSource(t), "the prompt view") {
		t.Errorf("the prompt view: %s", v)
	}
	t.Logf("screenshot: %s", screenshot(t, b, "ui-prompt-to-chat.png"))

	// 2. Into the chat: the query box holds the prompt's text, to read,
	// edit and send.
	const want = "Please promote Alice to the head of the Engineering team."
	b.do("use it in the chat",
		clickNode(`#prompt-to-chat`),
		waitJS(`document.activeElement === document.querySelector("#query-input")`),
	)
	if got := eval[string](b, "query box", `document.querySelector("#query-input").value`); got != want {
		t.Errorf("the query box holds %q; want %q", got, want)
	}
	b.do("send it",
		chromedp.KeyEvent(kb.Enter),
		waitJS(lastTurn+`?.querySelector('[data-type="completed"]') != null && document.body.dataset.state === "idle"`),
	)
	if got := eval[string](b, "asked", lastTurn+`.querySelector('.user-query[data-type="query"]').textContent`); !strings.Contains(got, want) {
		t.Errorf("the chat asked %q; want the prompt's text", got)
	}

	// 3. A resource template's variable: the server's suggestion.
	const id = `#resource-list li[data-template="demo://resource/dynamic/text/{resourceId}"] input[name="resourceId"]`
	b.do("a template's suggestion",
		clickNode(`#tab-resources`),
		chromedp.WaitVisible(css(id)),
		chromedp.SendKeys(css(id), "7"),
		waitJS(options(id)+` === "7"`),
	)
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}

// hostilePrompts is an MCP server on 127.0.0.1 whose prompt "report"
// suggests each of values for its argument and answers with a user and an
// assistant message made of them.
func hostilePrompts(t *testing.T, values []string) *httptest.Server {
	t.Helper()
	complete := hostileCompleter(values)
	srv := mcpserver.NewMCPServer("evil", "1.0.0", mcpserver.WithPromptCapabilities(false),
		mcpserver.WithCompletions(), mcpserver.WithPromptCompletionProvider(complete))
	srv.AddPrompt(mcp.NewPrompt("report", mcp.WithArgument("topic", mcp.RequiredArgument())),
		func(_ context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return mcp.NewGetPromptResult("", []mcp.PromptMessage{
				mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent(req.Params.Arguments["topic"]+"\n"+strings.Join(values, "\n"))),
				mcp.NewPromptMessage(mcp.RoleAssistant, mcp.NewTextContent(values[0])),
			}), nil
		})
	ts := httptest.NewServer(mcpserver.NewStreamableHTTPServer(srv))
	t.Cleanup(ts.Close)
	return ts
}

// hostileCompleter suggests its values, whatever was typed.
type hostileCompleter []string

func (c hostileCompleter) CompletePromptArgument(context.Context, string, mcp.CompleteArgument, mcp.CompleteContext) (*mcp.Completion, error) {
	return &mcp.Completion{Values: c}, nil
}

// TestBrowserHostilePrompt: a hostile server's suggestions and prompt
// messages (the Markdown fuzz corpus) reach the panel and the query box
// as text: the suggestions are the server's strings, unchanged, no payload
// runs, CSP refuses nothing and the canary host is never reached.
func TestBrowserHostilePrompt(t *testing.T) {
	canary := newCanary(t)
	corpus := hostileMarkdown(canary.URL)[:90]
	mcpSrv := hostilePrompts(t, corpus)
	s := startService(t, serveOptions{Config: fmt.Sprintf(`{"servers": {"evil": {"type": "http", "url": %q}}}`, mcpSrv.URL+"/mcp")})
	b := newBrowser(t, 2*browserTimeout)
	if _, err := chromedp.Call(b.ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: watchPage}); err != nil {
		t.Fatal(err)
	}
	const topic = `#prompt-form [name="topic"]`
	b.do("open the prompt and type",
		chromedp.Navigate(s.URL+"/tree/alice/xss2"),
		waitJS(`document.body.dataset.live === "live" && document.body.dataset.state === "idle"`),
		chromedp.Click(css(`#tree .node[data-id="mcp_evil"] > .row .label`)),
		clickNode(`#tab-prompts`),
		chromedp.WaitVisible(css(`#prompt-list li[data-prompt="report"] button.open`)),
		clickNode(`#prompt-list li[data-prompt="report"] button.open`),
		chromedp.SendKeys(css(topic), "x"),
		waitJS(`document.querySelector(`+jsQuote(topic)+`).dataset.suggestions === "`+strconv.Itoa(len(corpus))+`"`),
	)
	got := eval[[]string](b, "suggestions", `[...document.querySelector(`+jsQuote(topic)+`).list.options].map((o) => o.value)`)
	for i := range min(len(got), len(corpus)) {
		if got[i] != corpus[i] {
			t.Errorf("suggestion %d is %q; want the server's %q", i, got[i], corpus[i])
		}
	}
	b.do("get it and use it in the chat",
		clickNode(`#prompt-form-submit`),
		waitJS(`document.querySelector("#prompt-result").dataset.state === "ok"`),
		clickNode(`#prompt-to-chat`),
	)
	eval[int](b, "provoke", provoke(`#prompt-result .prompt-message *`))
	checkNothingRan(t, b, "the prompt in the panel and the query box", canary)
	if v := eval[string](b, "query box", `document.querySelector("#query-input").value`); !strings.HasPrefix(v, "User: x\n") || !strings.Contains(v, corpus[len(corpus)-1]) {
		t.Errorf("the query box holds %.200q; want the prompt's messages as text", v)
	}
}
