package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"

	"github.com/elysia-go/elysia/internal/testenv"
)

// openAs opens user's page on s with key in the page's key store.
func openAs(b *browser, s *serviceProc, key, user string) {
	b.t.Helper()
	b.do("open "+user+"'s page",
		chromedp.Navigate(s.URL+"/healthz"),
		chromedp.Evaluate[chromedp.Void](`localStorage.setItem("elysia.apiKey", `+jsString(key)+`)`),
		chromedp.Navigate(s.URL+"/tree/"+user+"/c1"),
		waitJS(`document.body.dataset.live === "live" && document.body.dataset.state === "idle"`),
		chromedp.WaitVisible(css(`#tree .node[data-id="mcp_todo"]`)),
	)
}

// openHistory opens the todo panel's History tab and waits until it has
// loaded.
func openHistory(b *browser) {
	b.t.Helper()
	b.do("open the History tab",
		chromedp.Click(css(`#tree .node[data-id="mcp_todo"] > .row .label`)),
		chromedp.WaitVisible(css(`#tool-panel`)),
		clickNode(`#tab-history`),
		waitJS(`/request|Nothing sent/.test(document.querySelector("#history-status").textContent)`),
	)
}

// TestBrowserHistory: on a keyed service with a per-user todo server,
// alice lists the tools and runs create_todo in the panel; its History tab
// shows the tools/list and the tools/call, each with how long it took and
// how big the request and the answer were, the call's request and answer
// when opened, with a Copy button that copies the message; the method
// filter narrows the list to tools/call; the server's notifications and
// its stderr have their sections; axe finds nothing serious. Bob, on his own key, sees none of
// alice's session; the admin sees alice's call.
func TestBrowserHistory(t *testing.T) {
	s := startService(t, serveOptions{Env: append(newFakeLLM(t).Env(), "ELYSIA_API_KEYS=k-admin:*,k-alice:alice,k-bob:bob"),
		Config: fmt.Sprintf(`{"servers": {"todo": {"type": "stdio", "command": %q, "env": {"TODO_DB": "./data/todos.db", "TODO_LOG_LEVEL": "debug"}, "cwd": ".", "per_user": true}}}`,
			testenv.TodoMCP(t))})
	b := newBrowser(t, 2*browserTimeout)
	b.do("let the page use the clipboard", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		for _, name := range []string{"clipboard-read", "clipboard-write"} {
			if _, err := cdp.Call(ctx, tg, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{
				Permission: &cdpbrowser.PermissionDescriptor{Name: name}, Setting: cdpbrowser.PermissionSettingGranted, Origin: s.URL}); err != nil {
				return err
			}
		}
		return nil
	}))
	openAs(b, s, "k-alice", "alice")
	b.do("list the tools and run create_todo",
		chromedp.Click(css(`#tree .node[data-id="mcp_todo"] > .row .label`)),
		chromedp.WaitVisible(css(`#tool-panel`)),
		clickNode(`#list-tools`),
		chromedp.WaitVisible(css(`#tool-list li[data-tool="create_todo"] .run`)),
		clickNode(`#tool-list li[data-tool="create_todo"] button.run`),
		chromedp.WaitVisible(css(`#tool-form #field-title`)),
		chromedp.SendKeys(css(`#field-title`), "alice's secret plan"),
		clickNode(`#tool-form-submit`),
		waitJS(`document.querySelector("#tool-result").dataset.state === "ok"`),
	)
	openHistory(b)
	b.do("the call in the history", waitJS(`!!document.querySelector('#history-requests li.history-item[data-method="tools/call"]')`))
	got := eval[map[string]any](b, "the history", `(() => {
		const one = (m) => {
			const li = document.querySelector('#history-requests li.history-item[data-method="' + m + '"]');
			return li && {duration: li.querySelector(".h-duration").textContent, size: li.querySelector(".h-size").textContent,
				user: li.querySelector(".h-user")?.textContent || "", tool: li.querySelector(".h-tool")?.textContent || ""};
		};
		return {list: one("tools/list"), call: one("tools/call"), init: !!one("initialize"),
			sections: ["#history-notifications", "#history-stderr"].every((s) => !!document.querySelector(s)),
			stderr: document.querySelector("#history-stderr").textContent};
	})()`)
	for _, m := range []string{"list", "call"} {
		e, _ := got[m].(map[string]any)
		if e == nil || !strings.HasSuffix(e["duration"].(string), " ms") && !strings.HasSuffix(e["duration"].(string), " s") ||
			!strings.Contains(e["size"].(string), " B → ") {
			t.Errorf("tools/%s in the history: %v; want its timing and its sizes (B → ...)", m, got[m])
		}
	}
	if call, _ := got["call"].(map[string]any); call == nil || call["user"] != "alice" || call["tool"] != "create_todo" {
		t.Errorf("the tools/call entry: %v; want alice's create_todo", got["call"])
	}
	if got["init"] != true || got["sections"] != true || !strings.Contains(got["stderr"].(string), "of alice's process") {
		t.Errorf("the history: initialize %v, sections %v, stderr %q; want the handshake, notifications and stderr sections, alice's stderr", got["init"], got["sections"], got["stderr"])
	}

	b.do("open the call and copy its answer",
		clickNode(`#history-requests li.history-item[data-method="tools/call"] summary`),
		chromedp.WaitVisible(css(`#history-requests li.history-item[data-method="tools/call"] pre.h-message[data-part="answer"]`)),
		clickNode(`#history-requests li.history-item[data-method="tools/call"] button.copy-message[data-part="answer"]`),
		waitJS(`document.querySelector('#history-requests li.history-item[data-method="tools/call"] button.copy-message[data-part="answer"]').dataset.copied === "true"`),
	)
	parts := eval[map[string]string](b, "the call's messages", `(async () => {
		const li = document.querySelector('#history-requests li.history-item[data-method="tools/call"]');
		return {request: li.querySelector('pre[data-part="request"]').textContent, answer: li.querySelector('pre[data-part="answer"]').textContent,
			clip: await navigator.clipboard.readText()};
	})()`, chromedp.EvalAwaitPromise)
	if !strings.Contains(parts["request"], `"title": "alice's secret plan"`) || !strings.Contains(parts["answer"], "Created todo") {
		t.Errorf("the call's request %q and answer %q; want the arguments and the result, indented", parts["request"], parts["answer"])
	}
	if !strings.Contains(parts["clip"], "Created todo") {
		t.Errorf("the clipboard holds %q after Copy; want the answer", parts["clip"])
	}

	docScreenshot(t, b, "history.png")
	for _, v := range axeViolations(b, axeSource(t), "the History tab") {
		t.Errorf("axe: %s", v)
	}
	b.do("filter by tools/call",
		chromedp.SetValue(css(`#history-method`), "tools/call"),
		chromedp.Evaluate[chromedp.Void](`document.querySelector("#history-method").dispatchEvent(new Event("change"))`),
	)
	shown := eval[[]string](b, "the filtered list", `[...document.querySelectorAll("#history-requests li.history-item")].filter((li) => !li.hidden).map((li) => li.dataset.method)`)
	if len(shown) == 0 || strings.Join(shown, ",") != strings.TrimSuffix(strings.Repeat("tools/call,", len(shown)), ",") {
		t.Errorf("filtered by tools/call, the list shows %q", shown)
	}

	bob := b.newTab(t)
	openAs(bob, s, "k-bob", "bob")
	openHistory(bob)
	seen := eval[map[string]any](bob, "bob's history", `({
		calls: document.querySelectorAll('#history-requests li.history-item[data-method="tools/call"]').length,
		alice: document.querySelector("#tab-panel-history").textContent.includes("alice"),
	})`)
	if seen["calls"] != 0.0 || seen["alice"] != false {
		t.Errorf("bob's History shows %v tools/calls (alice named: %v); want none of alice's session", seen["calls"], seen["alice"])
	}

	admin := b.newTab(t)
	openAs(admin, s, "k-admin", "alice")
	openHistory(admin)
	admin.do("the admin sees alice's call", waitJS(`[...document.querySelectorAll('#history-requests li.history-item[data-method="tools/call"] .h-user')].some((u) => u.textContent === "alice")`))
	for _, p := range []*browser{b, bob, admin} {
		// The favicon is asked for on /healthz, where openAs sets the key.
		if errs := p.consoleErrors("favicon.ico"); len(errs) > 0 {
			t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
		}
	}
}
