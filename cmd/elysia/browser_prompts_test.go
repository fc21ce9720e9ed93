package main

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
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
