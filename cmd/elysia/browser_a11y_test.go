package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/elysia-go/elysia/internal/testenv"
)

// axeSource returns the text of axe-core's axe.min.js: $ELYSIA_AXE_JS, else
// the copy npm ci installs under testdata/npm (pinned by its
// package-lock.json).
func axeSource(tb testing.TB) string {
	tb.Helper()
	p := os.Getenv("ELYSIA_AXE_JS")
	if p == "" {
		p = filepath.Join(testenv.RepoRoot(), "testdata", "npm", "node_modules", "axe-core", "axe.min.js")
	}
	b, err := os.ReadFile(p)
	if err != nil {
		testenv.Missing(tb, "axe-core is not installed (run: npm ci --prefix testdata/npm)")
	}
	return string(b)
}

// axeViolations runs axe-core on the page as it is and returns its serious
// and critical violations against WCAG 2.2 A and AA, one line each with
// the first nodes that fail. axe goes in through DevTools' Runtime.evaluate,
// which the page's Content-Security-Policy does not govern.
func axeViolations(b *browser, src, scene string) []string {
	b.t.Helper()
	if !eval[bool](b, "axe loaded", `typeof window.axe === "object"`) {
		b.do("load axe", chromedp.Evaluate[chromedp.Void](src))
	}
	return eval[[]string](b, "axe on "+scene, `axe.run(document, {
		runOnly: {type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]},
		resultTypes: ["violations"],
	}).then((r) => r.violations
		.filter((v) => v.impact === "serious" || v.impact === "critical")
		.map((v) => v.impact + " " + v.id + ": " + v.help + " [" + v.nodes.slice(0, 4).map((n) => n.target.join(" ") + (n.failureSummary ? " (" + n.failureSummary.replace(/\s+/g, " ").slice(0, 160) + ")" : "")).join("; ") + "]"))`,
		chromedp.EvalAwaitPromise)
}

// badgeStates are the classes a server's badge can take (tree.js).
var badgeStates = []string{"idle", "connecting", "connected", "degraded", "failed", "disabled", "needs_sign_in", "unknown"}

// badgeContrast puts a badge of every state on the tree's first gateway
// row, highlighted as on the agent's path, and returns axe-core's
// color-contrast findings on them that are not a pass (a violation, or a
// contrast axe could not work out), one line each. The badges a page
// happens to show are one or two states; this sees them all.
func badgeContrast(b *browser, src string) []string {
	b.t.Helper()
	if !eval[bool](b, "axe loaded", `typeof window.axe === "object"`) {
		b.do("load axe", chromedp.Evaluate[chromedp.Void](src))
	}
	states, _ := json.Marshal(badgeStates)
	return eval[[]string](b, "badge contrast", `(() => {
		const node = document.querySelector("#tree .node[data-gateway]");
		const row = node.querySelector(":scope > .row");
		const wasOnPath = node.classList.contains("on-path");
		node.classList.add("on-path");
		row.style.flexWrap = "wrap";
		for (const st of `+string(states)+`) {
			const e = document.createElement("span");
			e.className = "badge contrast-probe state-" + st;
			e.textContent = st.replace("_", " ");
			row.append(e);
		}
		return axe.run({include: [[".badge.contrast-probe"]]}, {runOnly: {type: "rule", values: ["color-contrast"]}})
			.then((r) => [...r.violations, ...r.incomplete].flatMap((v) => v.nodes.map((n) =>
				n.target.join(" ") + ": " + (n.any[0]?.message || v.help))))
			.finally(() => {
				for (const e of document.querySelectorAll(".badge.contrast-probe")) e.remove();
				if (!wasOnPath) node.classList.remove("on-path");
				row.style.flexWrap = "";
			});
	})()`, chromedp.EvalAwaitPromise)
}

// TestBrowserAccessibility runs axe-core on the tree page, the chat with a
// result, the gateway panel and the settings dialog: no serious or
// critical violation of WCAG 2.2 AA, and every badge state readable
// (4.5:1) in both themes. It also checks what axe cannot: the
// tree is a tree the arrow keys walk, a conversation is one Tab stop, and
// Esc stops a running query.
func TestBrowserAccessibility(t *testing.T) {
	src := axeSource(t)
	llm := newFakeLLM(t,
		call("mcp_todo", map[string]any{"action": "execute", "tool_name": "create_todo",
			"tool_inputs": map[string]any{"title": "Buy oat milk", "tags": []string{"groceries"}}}),
		answer("Done: **Buy oat milk** is on your list."))
	s := startService(t, serveOptions{Env: llm.Env()})
	b := newBrowserWith(t, 2*browserTimeout, noEmojiFonts(t))
	check := func(scene string) {
		t.Helper()
		for _, v := range axeViolations(b, src, scene) {
			t.Errorf("%s: %s", scene, v)
		}
	}
	b.do("open the page",
		chromedp.Navigate(s.URL+"/tree/alice/c1"),
		waitJS(`document.body.dataset.live === "live" && document.body.dataset.state === "idle"`),
		chromedp.WaitVisible(css(`#tree .node[data-id="mcp_todo"] .badge[data-state]`)),
	)
	check("the tree page")
	for _, v := range badgeContrast(b, src) {
		t.Errorf("a badge: %s", v)
	}
	// Targets: the "i" button and the badges are 24 px high at least
	// (WCAG 2.2's 2.5.8).
	if small := eval[[]string](b, "target sizes", `[...document.querySelectorAll("#tree .row .info, #tree .row .badge")]
		.map((e) => [e, e.getBoundingClientRect()]).filter(([, r]) => r.height < 24 || r.width < 24)
		.map(([e, r]) => e.className + " " + Math.round(r.width) + "x" + Math.round(r.height))`); len(small) > 0 {
		t.Errorf("targets under 24x24 px: %v", small)
	}

	ask(b, "add oat milk")
	b.do("the run ends",
		waitJS(lastTurn+`.querySelector('[data-type="completed"]') !== null && document.body.dataset.state === "idle"`),
		chromedp.WaitVisible(css(`#chat [data-type="result"] table`)),
	)
	check("the chat with a result")

	b.do("open the panel",
		chromedp.Click(css(`#tree .node[data-id="mcp_todo"] > .row .label`)),
		clickNode(`#list-tools`),
		chromedp.WaitVisible(css(`#tool-list li[data-tool="create_todo"] .run`)),
		clickNode(`#tool-list li[data-tool="create_todo"] .run`),
		chromedp.WaitVisible(css(`#tool-form-submit`)),
	)
	check("the gateway panel")
	t.Logf("screenshot: %s", screenshot(t, b, "ui-tree.png")) // copied to docs/

	b.do("open the settings",
		clickNode(`#settings-button`),
		chromedp.WaitVisible(css(`#settings-dialog`)),
		chromedp.WaitVisible(css(`#settings-save`)),
	)
	check("the settings dialog")
	b.do("close the settings",
		clickNode(`#settings-close`),
		chromedp.WaitNotVisible(css(`#settings-dialog`)),
	)

	// The dark theme: the same page, its own colours.
	if _, err := chromedp.Call(b.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}},
	}); err != nil {
		t.Fatalf("emulate the dark theme: %v", err)
	}
	b.do("the dark theme", waitJS(`matchMedia("(prefers-color-scheme: dark)").matches`))
	check("the page in the dark theme")
	for _, v := range badgeContrast(b, src) {
		t.Errorf("a badge in the dark theme: %s", v)
	}
	t.Logf("screenshot: %s", screenshot(t, b, "ui-dark.png"))

	// The tree: role=tree with treeitems; arrow keys move the focus.
	roles := eval[[]string](b, "tree roles", `[
		document.querySelector("#tree [role=tree]") ? "tree" : "",
		String(document.querySelectorAll("#tree [role=treeitem]").length),
		String(document.querySelectorAll("#tree [role=treeitem][tabindex='0']").length),
	]`)
	if roles[0] != "tree" || roles[1] == "0" || roles[2] != "1" {
		t.Errorf("the tree: role %q, %s treeitems, %s in the Tab order; want a tree with one Tab stop", roles[0], roles[1], roles[2])
	} else {
		b.do("walk the tree with the keys",
			chromedp.Evaluate[chromedp.Void](`void document.querySelector("#tree [role=treeitem]").focus()`),
			chromedp.KeyEvent(kb.ArrowDown),
		)
		moved := eval[string](b, "focused item", `document.activeElement.matches("[role=treeitem]") ? document.activeElement.closest(".node").dataset.id : ""`)
		next := eval[string](b, "second item", `[...document.querySelectorAll("#tree [role=treeitem]")][1].closest(".node").dataset.id`)
		if moved != next {
			t.Errorf("ArrowDown on the tree's first item focused %q; want the next item %q", moved, next)
		}
	}

	// A conversation row is one Tab stop.
	if n := eval[int](b, "conversation tab stops", `[...document.querySelectorAll("#conversations li.current button, #conversations li.current a, #conversations li.current [tabindex]")].filter((e) => e.tabIndex >= 0 && e.checkVisibility()).length`); n != 1 {
		t.Errorf("the current conversation's row has %d Tab stops; want 1", n)
	}

	// Esc stops a running query.
	hold := make(chan struct{})
	defer close(hold)
	llm.Push(reply{Tool: "text_response", Args: `{"text": "late"}`, Hold: hold})
	ask(b, "list them")
	b.do("Esc stops it",
		chromedp.KeyEvent(kb.Escape),
		waitJS(`document.body.dataset.state === "idle"`),
		chromedp.WaitVisible(css(`#chat [data-type="stopped"]`)),
	)
	// The Delete key on a conversation's row deletes it, on a second press.
	b.do("delete with the keyboard",
		waitJS(`!document.querySelector("#query-stop").checkVisibility()`),
		chromedp.Evaluate[chromedp.Void](`void document.querySelector("#conversations li.current button.open").focus()`),
		chromedp.KeyEvent(kb.Delete),
		waitJS(`document.querySelector("#conversations li.current button.delete").dataset.confirm === "true"`),
	)
	b.do("confirm", chromedp.KeyEvent(kb.Delete))
	// The page navigates: ask until the new one answers (a question asked
	// mid-navigation fails, and is asked again).
	testenv.WaitFor(t, stepTimeout, "a new conversation to open", func() bool {
		ok, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](
			`/^\/tree\/alice\/c-[0-9a-f]{16}$/.test(location.pathname) && document.querySelector("#conversations li.current") !== null`))
		return err == nil && ok
	})
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}
