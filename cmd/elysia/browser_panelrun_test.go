package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/elysia-go/elysia/internal/testenv"
)

// openPanelTool lists the everything gateway's tools in its panel and opens
// tool's form.
func openPanelTool(b *browser, tool string) {
	b.t.Helper()
	listEverythingTools(b)
	b.do("open "+tool,
		clickNode(`#tool-list li[data-tool="`+tool+`"] .run`),
		chromedp.WaitVisible(css(`#tool-form #tool-form-submit`)),
	)
}

// TestBrowserPanelRunElicitation runs server-everything's elicitation tool
// from the server panel: the server's question shows as the chat's form in
// the panel, and the answer reaches the server, whose result echoes it.
// Before, the question was declined at once without the user seeing it.
func TestBrowserPanelRunElicitation(t *testing.T) {
	s := everythingService(t, newFakeLLM(t))
	b := newBrowser(t, 2*browserTimeout)
	openEverythingPage(b, s, "alice")
	openPanelTool(b, "trigger-elicitation-request")
	form := `#tool-result .elicitation[data-state="open"][data-mode="form"]`
	b.do("run it; the question shows",
		clickNode(`#tool-form-submit`),
		chromedp.WaitVisible(css(form+` [name="name"]`)),
	)
	if st := eval[string](b, "running", `document.querySelector("#tool-result").dataset.state`); st != "running" {
		t.Errorf("#tool-result[data-state] = %q while the question waits, want running", st)
	}
	t.Logf("screenshot: %s", screenshot(t, b, "ui-panel-question.png")) // copied to docs/
	b.do("answer",
		retype(form+` [name="name"]`, "Ada Lovelace"),
		retype(form+` [name="integer"]`, "7"),
		clickNode(form+` button.accept`),
		waitJS(`["ok", "error"].includes(document.querySelector("#tool-result").dataset.state)`),
	)
	result := eval[string](b, "result", `document.querySelector("#tool-result").textContent`)
	for _, w := range []string{"Ada Lovelace", "Favorite Integer: 7"} {
		if !strings.Contains(result, w) {
			t.Errorf("the panel's result does not carry %q:\n%.1500s", w, result)
		}
	}
	if strings.Contains(result, "declined") {
		t.Errorf("the panel's result says declined:\n%.1500s", result)
	}
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}

// TestBrowserPanelRunProgressAndCancel runs server-everything's long
// operation from the server panel: a progress bar grows while it runs, and
// the form's Cancel ends the call on the server (the gateway logs its end
// long before the operation's 60 s) while no result ever shows. Before,
// the panel showed a spinner only, and Cancel hid the form while the call
// ran on.
func TestBrowserPanelRunProgressAndCancel(t *testing.T) {
	s := everythingService(t, newFakeLLM(t))
	b := newBrowser(t, 2*browserTimeout)
	openEverythingPage(b, s, "alice")
	openPanelTool(b, "trigger-long-running-operation")
	b.do("run 60 s in 120 steps",
		retype(`#tool-form [name="duration"]`, "60"),
		retype(`#tool-form [name="steps"]`, "120"),
		clickNode(`#tool-form-submit`),
		chromedp.WaitVisible(css(`#tool-result .tool-progress[data-state="running"] progress`)),
		waitJS(`document.querySelector("#tool-result .tool-progress progress").value >= 2`),
	)
	if max := eval[float64](b, "bar max", `document.querySelector("#tool-result .tool-progress progress").max`); max != 120 {
		t.Errorf("<progress> max = %v, want 120", max)
	}
	t.Logf("screenshot: %s", screenshot(t, b, "ui-panel-progress.png"))
	b.do("cancel",
		clickNode(`#tool-form .form-actions button:not([type=submit])`),
		waitJS(`document.querySelector("#tool-result").dataset.state === "cancelled"`),
		chromedp.WaitVisible(css(`#tool-result .tool-progress[data-state="stopped"]`)),
	)
	if hidden := eval[bool](b, "form", `document.querySelector("#tool-form").hidden`); hidden {
		t.Error("the form was hidden by the Cancel of a running call; want it kept to run again")
	}
	// The gateway logs the call when it ends: cancelled, the call ends now.
	var logged map[string]any
	testenv.WaitFor(t, 20*time.Second, "the call to end after Cancel (a 60 s operation) and be logged", func() bool {
		for line := range strings.Lines(s.Output()) {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == "tool call" && rec["tool"] == "trigger-long-running-operation" {
				logged = rec
			}
		}
		return logged != nil
	})
	if d, _ := logged["duration"].(float64); time.Duration(d) > 40*time.Second {
		t.Errorf("the call lasted %v; want it ended by the Cancel", time.Duration(d))
	}
	if eval[bool](b, "result", `!!document.querySelector("#tool-result .result-head")`) {
		t.Error("a result showed after the Cancel")
	}
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}

// TestBrowserFailedServerShowsFailed: a server whose command does not
// exist is failed, with the reason, once the panel has tried it (not a
// grey idle badge), and the panel shows the error once. Before, the badge
// stayed idle and the error showed twice (the list's status and the
// server's last error).
func TestBrowserFailedServerShowsFailed(t *testing.T) {
	llm := newFakeLLM(t)
	s := startService(t, serveOptions{Env: llm.Env(), Config: `{"servers": {"bad": {"command": "elysia-no-such-command"}}}`})
	b := newBrowser(t, browserTimeout)
	b.do("open the page and the gateway",
		chromedp.Navigate(s.URL+"/tree/alice/c1"),
		chromedp.WaitVisible(css(`#tree .node[data-id="mcp_bad"][data-gateway="true"]`)),
		waitJS(`document.body.dataset.live === "live"`),
		chromedp.Click(css(`#tree .node[data-id="mcp_bad"] > .row .label`)),
		clickNode(`#list-tools`),
		waitJS(`/elysia-no-such-command/.test(document.querySelector("#tool-list-status").textContent)`),
	)
	b.do("the badge",
		waitJS(`document.querySelector("#tool-panel-info .badge")?.dataset.state === "failed"`),
	)
	for _, sel := range []string{`#tool-panel-info .badge`, `#tree .node[data-id="mcp_bad"] > .row .badge`} {
		state := eval[string](b, "badge "+sel, `document.querySelector(`+jsString(sel)+`).dataset.state`)
		title := eval[string](b, "badge title "+sel, `document.querySelector(`+jsString(sel)+`).title`)
		if state != "failed" || !strings.Contains(title, "elysia-no-such-command") {
			t.Errorf("%s: state %q, title %q; want failed with the reason", sel, state, title)
		}
	}
	text := eval[string](b, "panel text", `document.querySelector("#tool-panel").textContent`)
	if n := strings.Count(text, "executable file not found"); n != 1 {
		t.Errorf("the panel shows the error %d times, want once:\n%s", n, text)
	}
	t.Logf("screenshot: %s", screenshot(t, b, "ui-panel-failed.png"))
	for _, e := range b.consoleErrors() {
		if !strings.Contains(e, "502 (Bad Gateway)") { // the failed list's own answer
			t.Errorf("console error: %s", e)
		}
	}
}
