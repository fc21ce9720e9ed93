package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/elysia-go/elysia/internal/testenv"
)

// openEverythingPage opens user's page for conversation c1 on a service
// running server-everything, and waits until it is live.
func openEverythingPage(b *browser, s *serviceProc, user string) {
	b.t.Helper()
	b.do("open "+user+"'s page",
		chromedp.Navigate(s.URL+"/tree/"+user+"/c1"),
		chromedp.WaitVisible(css(`#tree .node[data-id="mcp_everything"][data-gateway="true"]`)),
		chromedp.WaitVisible(css(`#servers-status .server[data-server="everything"]`)),
		waitJS(`document.body.dataset.live === "live" && document.body.dataset.state === "idle"`),
	)
}

// listEverythingTools lists the gateway's tools in its panel, so that the
// panel's icons are on the page for checkIcons.
func listEverythingTools(b *browser) {
	b.t.Helper()
	b.do("list the gateway's tools",
		chromedp.Click(css(`#tree .node[data-id="mcp_everything"] > .row .label`)),
		clickNode(`#list-tools`),
		chromedp.WaitVisible(css(`#tool-list li[data-tool="trigger-long-running-operation"] .run`)),
	)
}

// ask sends a query from the query box.
func ask(b *browser, query string) {
	b.t.Helper()
	b.do("ask "+query,
		waitJS(`document.body.dataset.state === "idle"`),
		chromedp.SendKeys(css(`#query-input`), query),
		chromedp.Click(css(`#query-send`)),
		waitJS(`document.body.dataset.state === "running"`),
	)
}

// lastTurn is a JavaScript expression for the chat's last turn.
const lastTurn = `[...document.querySelectorAll("#chat .turn")].at(-1)`

// TestBrowserProgressAndStop runs server-everything's long operation from
// the chat, on a machine without an emoji font: the turn shows a progress
// bar that grows, the Stop button ends the query mid-way (the bar stays
// where it was), and the next query runs at once. Every icon, the new ones
// included, is drawn, and the console stays free of errors.
func TestBrowserProgressAndStop(t *testing.T) {
	llm := newFakeLLM(t,
		call("mcp_everything", map[string]any{"action": "execute", "tool_name": "trigger-long-running-operation",
			"tool_inputs": map[string]any{"duration": 60, "steps": 120}}),
		answer("next one"))
	s := everythingService(t, llm)
	b := newBrowserWith(t, 2*browserTimeout, noEmojiFonts(t))
	openEverythingPage(b, s, "alice")
	listEverythingTools(b)
	if !eval[bool](b, "stop hidden", `document.querySelector("#query-stop").hidden`) {
		t.Error("#query-stop is shown while no query runs")
	}

	// 1. The bar grows with the server's progress notifications.
	b.do("watch the bar",
		chromedp.Evaluate[chromedp.Void](`window.__progress = [];
			new MutationObserver(() => {
				const el = document.querySelector("#chat .tool-progress");
				if (el) window.__progress.push(Number(el.dataset.progress));
			}).observe(document.querySelector("#chat"), {subtree: true, childList: true, attributes: true, attributeFilter: ["data-progress"]});`),
	)
	ask(b, "run long")
	b.do("a progress bar that grows",
		chromedp.WaitVisible(css(`#query-stop`)),
		chromedp.WaitVisible(css(`#chat .tool-progress[data-state="running"][data-tool="trigger-long-running-operation"] progress`)),
		waitJS(`document.querySelector("#chat .tool-progress progress").value >= 3`),
	)
	bar := eval[[]float64](b, "the bar", `(() => {
		const p = document.querySelector("#chat .tool-progress progress");
		return [p.value, p.max];
	})()`)
	if bar[1] != 120 || bar[0] < 3 || bar[0] > 120 {
		t.Errorf("<progress> value %v of max %v; want at least 3 of 120", bar[0], bar[1])
	}
	seen := eval[[]float64](b, "progress seen", `window.__progress`)
	if len(seen) < 3 || !slices.IsSorted(seen) || seen[0] == seen[len(seen)-1] {
		t.Errorf("the bar went through %v; want a growing series", seen)
	}
	checkIcons(t, b)
	t.Logf("screenshot: %s", screenshot(t, b, "ui-progress.png"))
	newIcons := eval[[]string](b, "new icons", `(() => {
		const out = [];
		for (const sel of ["#query-stop", "#chat .tool-progress", "#tab-tools", "#tab-resources", "#tab-prompts", "#tab-logs"]) {
			const svg = document.querySelector(sel + " svg.icon");
			const r = svg && svg.getBoundingClientRect();
			if (!r || !r.width || !r.height) out.push(sel + ": no icon with a size");
		}
		return out;
	})()`)
	for _, p := range newIcons {
		t.Error(p)
	}

	// 2. Stop ends the query at once; the bar stays where it got to.
	b.do("stop",
		chromedp.Click(css(`#query-stop`)),
		waitJS(`document.body.dataset.state === "idle"`),
		chromedp.WaitVisible(css(`#chat [data-type="stopped"]`)),
		chromedp.WaitNotVisible(css(`#query-stop`)),
		chromedp.WaitVisible(css(`#chat .tool-progress[data-state="stopped"]`)),
	)
	if n := eval[int](b, "bars left", `document.querySelectorAll("#chat .tool-progress progress").length`); n != 0 {
		t.Errorf("%d progress bars still shown after the stop", n)
	}
	stoppedAt := eval[string](b, "stopped at", `document.querySelector("#chat .tool-progress").textContent`)
	if !strings.Contains(stoppedAt, "stopped at") || strings.Contains(stoppedAt, "120 / 120") {
		t.Errorf("the stopped call says %q; want where it stopped, short of 120", stoppedAt)
	}

	// 3. The conversation takes the next query at once.
	ask(b, "and now")
	b.do("the next query runs",
		waitJS(lastTurn+`.querySelector('.answer[data-type="text"]')?.textContent.includes("next one")`),
		waitJS(lastTurn+`.querySelector('[data-type="completed"]') !== null && document.body.dataset.state === "idle"`),
	)
	if errs := eval[[]string](b, "errors of the second turn", `[...`+lastTurn+`.querySelectorAll('[data-type="error"]')].map((e) => e.textContent)`); len(errs) > 0 {
		t.Errorf("the query after the stop shows errors: %q", errs)
	}
	t.Logf("screenshot: %s", screenshot(t, b, "ui-progress-stop.png"))
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}

// TestBrowserElicitation answers server-everything's question through the
// form in the chat, with the emoji font installed: the form shows the
// schema's defaults and every kind of control, an answer the server
// refuses is shown next to the form, the accepted answer reaches the
// server (its result holds the typed name and the default first line), a
// second question is declined, and bob's page never shows alice's form.
func TestBrowserElicitation(t *testing.T) {
	if !hasEmojiFont() {
		testenv.Missing(t, "no emoji font (apt-get install -y fonts-noto-color-emoji)")
	}
	elicit := call("mcp_everything", map[string]any{"action": "execute", "tool_name": "trigger-elicitation-request", "tool_inputs": map[string]any{}})
	llm := newFakeLLM(t, elicit, answer("thanks"), elicit, answer("as you wish"))
	s := everythingService(t, llm)
	b := newBrowser(t, 3*browserTimeout)
	openEverythingPage(b, s, "alice")
	listEverythingTools(b)
	bob := b.newTab(t)
	openEverythingPage(bob, s, "bob")
	bob.do("watch bob's chat", chromedp.Evaluate[chromedp.Void](`window.__asked = false;
		new MutationObserver(() => { window.__asked ||= !!document.querySelector(".elicitation"); })
			.observe(document.body, {subtree: true, childList: true});`))

	// 1. The question arrives as a form with the schema's defaults.
	ask(b, "ask me")
	form := `#chat .elicitation[data-state="open"][data-mode="form"]`
	b.do("the form", chromedp.WaitVisible(css(form+` [name="name"]`)))
	got := eval[map[string]any](b, "the form's defaults", `(() => {
		const f = document.querySelector(`+jsString(form)+`);
		const v = (n) => f.querySelector("[name='" + n + "']");
		const sel = (n) => v(n).selectedOptions[0]?.textContent;
		const picked = (n) => [...f.querySelectorAll("input[name='" + n + "']:checked")].map((c) => c.parentElement.textContent.trim());
		return {
			firstLine: v("firstLine").value, integer: v("integer").value, number: v("number").value,
			email: v("email").type, homepage: v("homepage").type, birthdate: v("birthdate").type,
			integerMax: v("integer").max, check: v("check").type,
			friend: sel("untitledSingleSelectEnum"), hero: sel("titledSingleSelectEnum"), pet: sel("legacyTitledEnum"),
			instruments: picked("untitledMultipleSelectEnum").join(","), fish: picked("titledMultipleSelectEnum").join(","),
			fishChoices: f.querySelectorAll("input[name='titledMultipleSelectEnum']").length,
			message: f.querySelector(".elicit-message").textContent,
			buttons: [...f.querySelectorAll("button")].map((b) => b.className.split(" ").at(-1)).join(","),
		};
	})()`)
	want := map[string]any{
		"firstLine": "It was a dark and stormy night.", "integer": "42", "number": "3.14",
		"email": "email", "homepage": "url", "birthdate": "date", "integerMax": "100", "check": "checkbox",
		"friend": "Monica", "hero": "Superman", "pet": "Cats",
		"instruments": "Guitar", "fish": "Tuna", "fishChoices": 3.0,
		"message": "Please provide inputs for the following fields:",
		"buttons": "cancel,decline,accept",
	}
	for k, w := range want {
		if fmt.Sprint(got[k]) != fmt.Sprint(w) {
			t.Errorf("the form's %s = %v, want %v", k, got[k], w)
		}
	}
	checkIcons(t, b)
	if !eval[bool](b, "question icon", `!!document.querySelector("#chat .elicitation .elicit-head svg.icon")`) {
		t.Error("the question has no icon")
	}
	t.Logf("screenshot: %s", screenshot(t, b, "ui-elicitation-form.png"))

	// 2. An answer the server refuses: its reason shows next to the form,
	// which stays open; the query goes on.
	b.do("an integer out of range",
		retype(form+` [name="name"]`, "Ada Lovelace"),
		retype(form+` [name="integer"]`, "1000"),
		clickNode(form+` button.accept`),
		waitJS(`document.querySelector("#chat .elicitation").dataset.state === "invalid"`),
		chromedp.WaitVisible(css(`#chat .elicitation .form-error`)),
	)
	if msg := eval[string](b, "refusal", `document.querySelector("#chat .elicitation .form-error").textContent`); !strings.Contains(msg, "integer") {
		t.Errorf("the form's error = %q, want the server's reason naming integer", msg)
	}
	if st := eval[string](b, "still running", `document.body.dataset.state`); st != "running" {
		t.Errorf("body[data-state] = %q after a refused answer, want running", st)
	}

	// 3. The corrected answer goes through; the result carries the typed
	// name and the default the user left alone.
	b.do("accept",
		retype(`#chat .elicitation [name="integer"]`, "7"),
		clickNode(`#chat .elicitation button.accept`),
		waitJS(lastTurn+`.querySelector('[data-type="completed"]') !== null && document.body.dataset.state === "idle"`),
	)
	if st := eval[string](b, "answered", `document.querySelector("#chat .elicitation").dataset.state`); st != "answered" {
		t.Errorf("the question's state after the answer = %q, want answered", st)
	}
	result := eval[string](b, "result", `[...`+lastTurn+`.querySelectorAll('[data-type="result"]')].map((e) => e.textContent).join("\n")`)
	for _, w := range []string{"Ada Lovelace", "It was a dark and stormy night.", "Favorite Integer: 7"} {
		if !strings.Contains(result, w) {
			t.Errorf("the result does not carry %q:\n%s", w, result)
		}
	}

	// 4. The second question is declined.
	ask(b, "ask me again")
	b.do("decline",
		chromedp.WaitVisible(css(`#chat .turn:last-child .elicitation[data-state="open"] button.decline`)),
		clickNode(`#chat .turn:last-child .elicitation button.decline`),
		waitJS(lastTurn+`.querySelector('[data-type="completed"]') !== null && document.body.dataset.state === "idle"`),
	)
	result = eval[string](b, "declined result", `[...`+lastTurn+`.querySelectorAll('[data-type="result"]')].map((e) => e.textContent).join("\n")`)
	if !strings.Contains(result, "declined") {
		t.Errorf("the result after Decline = %q, want the server's declined", result)
	}
	if st := eval[string](b, "declined state", lastTurn+`.querySelector(".elicitation").dataset.action`); st != "decline" {
		t.Errorf("the second question's action = %q, want decline", st)
	}

	// 5. Bob's page never showed a question.
	if asked := eval[bool](bob, "bob's page", `window.__asked || !!document.querySelector(".elicitation")`); asked {
		t.Error("bob's page showed alice's question")
	}
	t.Logf("screenshot: %s", screenshot(t, b, "ui-elicitation.png"))
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
	if errs := bob.consoleErrors(); len(errs) > 0 {
		t.Errorf("bob's console errors:\n%s", strings.Join(errs, "\n"))
	}
}

// TestBrowserResourcesAndPrompts uses the gateway panel's Resources,
// Prompts and Logs tabs against server-everything: resources listed and
// one read, prompts listed and one filled in and got, the log shown.
func TestBrowserResourcesAndPrompts(t *testing.T) {
	s := everythingService(t, newFakeLLM(t))
	b := newBrowserWith(t, browserTimeout, noEmojiFonts(t))
	openEverythingPage(b, s, "alice")
	b.do("open the gateway",
		chromedp.Click(css(`#tree .node[data-id="mcp_everything"] > .row .label`)),
		chromedp.WaitVisible(css(`#tab-resources`)),
	)

	// 1. Resources: listed, and a click reads one.
	b.do("list resources",
		clickNode(`#tab-resources`),
		chromedp.WaitVisible(css(`#resource-list li[data-uri] button.open`)),
	)
	if sel := eval[string](b, "tab", `document.querySelector("#tab-resources").getAttribute("aria-selected")`); sel != "true" {
		t.Errorf("#tab-resources aria-selected = %q after a click", sel)
	}
	uri := eval[string](b, "first uri", `document.querySelector("#resource-list li[data-uri]").dataset.uri`)
	b.do("read "+uri,
		clickNode(`#resource-list li[data-uri] button.open`),
		waitJS(`["ok", "error"].includes(document.querySelector("#resource-content").dataset.state)`),
	)
	if st, text := eval[string](b, "read state", `document.querySelector("#resource-content").dataset.state`),
		eval[string](b, "read text", `document.querySelector("#resource-content").textContent`); st != "ok" || !strings.Contains(text, uri) {
		t.Errorf("#resource-content: state %q, text %.300q; want ok showing %s", st, text, uri)
	}

	// 2. Prompts: listed; one with arguments filled in and got.
	b.do("list prompts",
		clickNode(`#tab-prompts`),
		chromedp.WaitVisible(css(`#prompt-list li[data-prompt="args-prompt"] button.open`)),
		chromedp.WaitNotVisible(css(`#tab-panel-resources`)),
		clickNode(`#prompt-list li[data-prompt="args-prompt"] button.open`),
		chromedp.WaitVisible(css(`#prompt-form [name="city"]`)),
		// A missing required argument is caught before anything is sent.
		clickNode(`#prompt-form-submit`),
		waitJS(`/city/.test(document.querySelector("#prompt-form-error").textContent)`),
		chromedp.SendKeys(css(`#prompt-form [name="city"]`), "Lisbon"),
		clickNode(`#prompt-form-submit`),
		waitJS(`["ok", "error", "invalid"].includes(document.querySelector("#prompt-result").dataset.state)`),
	)
	if st, text := eval[string](b, "prompt state", `document.querySelector("#prompt-result").dataset.state`),
		eval[string](b, "prompt text", `document.querySelector("#prompt-result").textContent`); st != "ok" || !strings.Contains(text, "Lisbon") {
		t.Errorf("#prompt-result: state %q, text %.300q; want ok with the city", st, text)
	}
	if n := eval[int](b, "messages", `document.querySelectorAll('#prompt-result .prompt-message[data-role="user"]').length`); n == 0 {
		t.Error("#prompt-result shows no user message")
	}

	// 3. Logs: the tab answers with the server's log (possibly empty).
	b.do("logs",
		clickNode(`#tab-logs`),
		waitJS(`/message/.test(document.querySelector("#logs-status").textContent)`),
	)
	t.Logf("screenshot: %s", screenshot(t, b, "ui-prompts.png"))
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	return fmt.Sprintf("%q", s)
}
