package main

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// focusedNode is a JavaScript expression for the data-id of the tree node
// whose row has the focus ("" when the focus is elsewhere).
const focusedNode = `(document.activeElement?.matches("#tree [role=treeitem]") ? document.activeElement.closest(".node").dataset.id : "")`

// TestBrowserKeyboardPanel walks to the todo gateway with the keyboard
// alone: the focused tree row has a visible outline; Enter opens the
// panel, where "List tools" keeps the focus while and after it lists; Esc
// closes the panel and gives the focus back to the gateway's row. Before,
// the outline's rule named an element that no longer exists (the focused
// row showed nothing), and the focus fell to the page's body once "List
// tools" disabled itself, so Esc no longer reached the panel.
func TestBrowserKeyboardPanel(t *testing.T) {
	s := startService(t, serveOptions{Env: newFakeLLM(t).Env()})
	b := newBrowser(t, browserTimeout)
	b.do("open the page",
		chromedp.Navigate(s.URL+"/tree/alice/c1"),
		waitJS(`document.body.dataset.live === "live" && document.body.dataset.state === "idle"`),
		chromedp.WaitVisible(css(`#tree .node[data-id="mcp_todo"] .badge[data-state]`)),
		waitJS(`document.activeElement === document.querySelector("#query-input")`),
	)
	// Back from the query box to the tree, as a keyboard user goes.
	for i := 0; i < 20 && eval[string](b, "focus", focusedNode) == ""; i++ {
		b.do("shift+tab", chromedp.KeyEvent(kb.Tab, chromedp.KeyModifiers(chromedp.ModifierShift)))
	}
	b.do("to the gateway", chromedp.KeyEvent(kb.End))
	if id := eval[string](b, "focused row", focusedNode); id != "mcp_todo" {
		t.Fatalf("the keyboard is on %q, want the todo gateway's row", id)
	}
	ring := eval[map[string]any](b, "the focus ring", `(() => {
		const el = document.activeElement, cs = getComputedStyle(el);
		return {visible: el.matches(":focus-visible"), style: cs.outlineStyle, width: parseFloat(cs.outlineWidth)};
	})()`)
	if ring["visible"] != true || ring["style"] == "none" || ring["width"].(float64) < 2 {
		t.Errorf("the focused tree row's outline: %v; want a visible outline of 2 px or more", ring)
	}
	t.Logf("screenshot: %s", screenshot(t, b, "ui-tree-focus.png"))

	b.do("Enter opens the panel on List tools",
		chromedp.KeyEvent(kb.Enter),
		chromedp.WaitVisible(css(`#tool-panel`)),
		waitJS(`document.activeElement === document.querySelector("#list-tools")`),
		chromedp.KeyEvent(kb.Enter),
		chromedp.WaitVisible(css(`#tool-list li[data-tool="create_todo"]`)),
	)
	if in := eval[string](b, "focus after listing", `document.activeElement.closest("#tool-panel") ? document.activeElement.id || document.activeElement.tagName : "outside: " + document.activeElement.tagName`); in != "list-tools" {
		t.Errorf("after List tools the focus is on %q, want it kept on #list-tools", in)
	}
	b.do("Esc closes the panel",
		chromedp.KeyEvent(kb.Escape),
		chromedp.WaitNotVisible(css(`#tool-panel`)),
	)
	if id := eval[string](b, "focus after Esc", focusedNode); id != "mcp_todo" {
		t.Errorf("after Esc the focus is on %q, want the todo gateway's row", id)
	}
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}

// TestBrowserNarrowPanel: on a 390 px wide screen the gateway panel opens
// above the sidebar drawer it was opened from (a server chip or a tree
// row), and closing it goes back to the drawer. Before, the panel opened
// under the drawer from a chip, and a tree row closed the drawer, so Esc
// put the focus on a row off the screen.
func TestBrowserNarrowPanel(t *testing.T) {
	s := startService(t, serveOptions{Env: newFakeLLM(t).Env()})
	b := newBrowser(t, browserTimeout)
	drawerOpen := waitJS(`document.querySelector("#sidebar").getBoundingClientRect().left >= 0`)
	// onTop is whether the panel is what a finger on the left of the screen,
	// where the drawer is, touches.
	onTop := `(() => {
		const el = document.elementFromPoint(120, 400);
		return el ? (el.closest("#tool-panel") ? "panel" : el.closest("#sidebar") ? "drawer" : el.tagName) : "nothing";
	})()`
	b.do("open the page at 390 px and the drawer",
		chromedp.EmulateViewport(390, 844),
		chromedp.Navigate(s.URL+"/tree/alice/c1"),
		waitJS(`document.body.dataset.live === "live" && document.body.dataset.state === "idle"`),
		clickNode(`#sidebar-toggle`),
		drawerOpen,
		chromedp.WaitVisible(css(`#servers-status .server[data-server="todo"]`)),
		clickNode(`#servers-status .server[data-server="todo"]`),
		chromedp.WaitVisible(css(`#tool-panel`)),
	)
	if got := eval[string](b, "what is on top", onTop); got != "panel" {
		t.Errorf("opened from a server chip, the left of the screen shows the %s; want the panel above the drawer", got)
	}
	t.Logf("screenshot: %s", screenshot(t, b, "ui-narrow-panel.png"))
	b.do("close it; the drawer is there",
		clickNode(`#tool-panel-close`),
		chromedp.WaitNotVisible(css(`#tool-panel`)),
		drawerOpen,
	)
	b.do("open it from the tree",
		chromedp.Click(css(`#tree .node[data-id="mcp_todo"] > .row .label`)),
		chromedp.WaitVisible(css(`#tool-panel`)),
	)
	if got := eval[string](b, "what is on top", onTop); got != "panel" {
		t.Errorf("opened from the tree, the left of the screen shows the %s; want the panel", got)
	}
	b.do("Esc goes back to the tree",
		chromedp.KeyEvent(kb.Escape),
		chromedp.WaitNotVisible(css(`#tool-panel`)),
		drawerOpen,
	)
	if id := eval[string](b, "focus after Esc", focusedNode); id != "mcp_todo" {
		t.Errorf("after Esc the focus is on %q, want the todo gateway's row in the open drawer", id)
	}
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}
