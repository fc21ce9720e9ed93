package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserCopies: a todo server with a copy (two todo-mcp over HTTP)
// shows both copies in its panel, where each is, its state and that copy 1
// serves. Once copy 1's process is gone, a call fails over to copy 2: the
// table shows copy 1 down and copy 2 serving, and the tree's badge says
// the server is degraded and runs on copy 2. axe finds nothing serious.
func TestBrowserCopies(t *testing.T) {
	primary, proc := todoHTTPProc(t)
	spare, _ := todoHTTPProc(t)
	s := startService(t, serveOptions{Env: newFakeLLM(t).Env(),
		Config: fmt.Sprintf(`{"servers": {"todo": {"url": %q, "copies": [{"url": %q}]}}}`, primary, spare)})
	b := newBrowser(t, 2*browserTimeout)
	table := `#tool-panel-info table.copies-table`
	b.do("open the panel and list the tools",
		chromedp.Navigate(s.URL+"/tree/alice/c1"),
		waitJS(`document.body.dataset.live === "live" && document.body.dataset.state === "idle"`),
		chromedp.Click(css(`#tree .node[data-id="mcp_todo"] > .row .label`)),
		chromedp.WaitVisible(css(`#tool-panel`)),
		clickNode(`#list-tools`),
		chromedp.WaitVisible(css(`#tool-list li[data-tool="list_todos"] .run`)),
		// The servers' state comes over the event stream, after the listing.
		waitJS(`document.querySelector(`+jsString(table+` tr[data-copy="1"]`)+`)?.dataset.state === "connected"`),
	)
	rows := func(step string) []map[string]string {
		return eval[[]map[string]string](b, step, `[...document.querySelectorAll(`+jsString(table+` tbody tr`)+`)].map((tr) => ({
			copy: tr.dataset.copy, serving: tr.dataset.serving, down: tr.dataset.down,
			where: tr.querySelector(".copy-where").textContent, state: tr.querySelector(".copy-state").textContent}))`)
	}
	before := rows("the copies")
	if len(before) != 2 || before[0]["serving"] != "true" || before[1]["serving"] != "false" ||
		!strings.Contains(before[0]["where"], primary) || !strings.Contains(before[1]["where"], spare) || before[0]["state"] != "connected" {
		t.Errorf("the copies table before the failover: %v; want copy 1 (%s) connected and serving, copy 2 (%s) not", before, primary, spare)
	}
	if caption := eval[string](b, "the caption", `document.querySelector(`+jsString(table+` caption`)+`).textContent`); caption != "Copies · priority · serving: copy 1" {
		t.Errorf("the table's caption says %q", caption)
	}

	_ = proc.Process.Kill()
	b.do("run list_todos once copy 1 is gone",
		clickNode(`#tool-list li[data-tool="list_todos"] button.run`),
		chromedp.WaitVisible(css(`#tool-form-submit`)),
		clickNode(`#tool-form-submit`),
		waitJS(`["ok", "error"].includes(document.querySelector("#tool-result").dataset.state)`),
	)
	if st := eval[string](b, "the result", `document.querySelector("#tool-result").dataset.state`); st != "ok" {
		t.Errorf("list_todos with copy 1 gone: %s, %q; want copy 2 to answer", st, eval[string](b, "the result", `document.querySelector("#tool-result").textContent`))
	}
	badge := `#tree .node[data-id="mcp_todo"] > .row .badge`
	b.do("the failover shows",
		waitJS(`document.querySelector(`+jsString(table+` tr[data-copy="2"]`)+`)?.dataset.serving === "true"`),
		waitJS(`document.querySelector(`+jsString(badge)+`)?.dataset.state === "degraded"`),
	)
	after := rows("the copies after the failover")
	if len(after) != 2 || after[0]["down"] != "true" || after[0]["serving"] != "false" || !strings.HasPrefix(after[0]["state"], "down") || after[1]["serving"] != "true" {
		t.Errorf("the copies table after the failover: %v; want copy 1 down, copy 2 serving", after)
	}
	if label := eval[string](b, "the badge", `document.querySelector(`+jsString(badge)+`).textContent`); label != "degraded · on copy 2" {
		t.Errorf("the tree's badge says %q; want degraded · on copy 2", label)
	}
	b.do("show the table", chromedp.Evaluate[chromedp.Void](`document.querySelector("#tool-panel").scrollTop = 0`))
	t.Logf("screenshot: %s", docScreenshot(t, b, "copies.png"))
	for _, v := range axeViolations(b, axeSource(t), "the copies table") {
		t.Errorf("axe: %s", v)
	}
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}
