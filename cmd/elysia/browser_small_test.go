package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// TestBrowserNoUntitledLeftBehind: opening / three times leaves no
// conversation behind; the first question creates the one it is asked in.
// Before, every visit saved an empty "Untitled conversation".
func TestBrowserNoUntitledLeftBehind(t *testing.T) {
	llm := newFakeLLM(t, answer("hello there"))
	s := startService(t, serveOptions{Env: append(llm.Env(), "ELYSIA_USER=carol")})
	b := newBrowser(t, browserTimeout)
	for range 3 {
		b.do("open /",
			chromedp.Navigate(s.URL+"/"),
			waitJS(`/^\/tree\/carol\/c-[0-9a-f]{16}$/.test(location.pathname)`),
			waitJS(`document.body.dataset.live === "live" && document.body.dataset.state === "idle"`),
			chromedp.WaitVisible(css(`#tree .node[data-id="mcp_todo"]`)),
		)
	}
	saved := func() []string {
		t.Helper()
		_, body := do(t, "GET", s.URL+"/conversations/carol", "", nil)
		var out []string
		list, _ := body["conversations"].([]any)
		for _, c := range list {
			m, _ := c.(map[string]any)
			out = append(out, m["conversation_id"].(string)+" "+m["title"].(string))
		}
		return out
	}
	if got := saved(); len(got) != 0 {
		t.Errorf("three visits to / left %d conversations behind: %q", len(got), got)
	}
	if rows := eval[[]string](b, "the list", `[...document.querySelectorAll("#conversations li .conv-title")].map((e) => e.textContent)`); strings.Join(rows, "|") != "New conversation" {
		t.Errorf("the page lists %q, want only the new conversation", rows)
	}
	ask(b, "say hello")
	b.do("the answer",
		waitJS(lastTurn+`.querySelector('[data-type="completed"]') !== null && document.body.dataset.state === "idle"`),
		waitJS(`document.querySelector("#conversations li.current .conv-title")?.textContent === "say hello"`),
	)
	if got := saved(); len(got) != 1 || !strings.HasSuffix(got[0], " say hello") {
		t.Errorf("after the first question carol has %q, want the one conversation it was asked in", got)
	}
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}

// TestBrowserThemeSwitch: beside the device's setting (System, the
// default), the top bar's switch picks Light or Dark; the choice outlives
// a reload and holds whatever the device says. Before, the page followed
// the device only.
func TestBrowserThemeSwitch(t *testing.T) {
	s := startService(t, serveOptions{Env: newFakeLLM(t).Env()})
	b := newBrowser(t, browserTimeout)
	device := func(scheme string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
				Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})
			return err
		})
	}
	// bg is the page's background: #f7f7f8 light, #101217 dark.
	const bg = `getComputedStyle(document.body).backgroundColor`
	const light, dark = "rgb(247, 247, 248)", "rgb(16, 18, 23)"
	pick := func(theme string) chromedp.Action[chromedp.Void] {
		return chromedp.SetValue(css(`#theme-select`), theme)
	}
	b.do("open the page on a light device",
		device("light"),
		chromedp.Navigate(s.URL+"/tree/alice/c1"),
		waitJS(`document.body.dataset.state === "idle"`),
		chromedp.WaitVisible(css(`#theme-select`)),
	)
	if got := eval[[]string](b, "the default", `[document.querySelector("#theme-select").value, `+bg+`]`); got[0] != "system" || got[1] != light {
		t.Errorf("a new page's theme: %v, want system and light", got)
	}
	for _, step := range []struct {
		device, theme, want string
	}{
		{"light", "dark", dark},
		{"dark", "dark", dark},
		{"dark", "light", light},
		{"dark", "system", dark},
		{"light", "system", light},
	} {
		b.do("device "+step.device+", theme "+step.theme,
			device(step.device),
			pick(step.theme),
			chromedp.Evaluate[chromedp.Void](`void document.querySelector("#theme-select").dispatchEvent(new Event("change"))`),
		)
		if got := eval[string](b, "background", bg); got != step.want {
			t.Errorf("device %s, theme %s: background %s, want %s", step.device, step.theme, got, step.want)
		}
	}
	b.do("choose dark and reload",
		pick("dark"),
		chromedp.Evaluate[chromedp.Void](`void document.querySelector("#theme-select").dispatchEvent(new Event("change"))`),
		device("light"),
		chromedp.Reload(),
		chromedp.WaitVisible(css(`#theme-select`)),
	)
	if got := eval[[]string](b, "after the reload", `[document.querySelector("#theme-select").value, document.documentElement.dataset.theme || "", `+bg+`]`); got[0] != "dark" || got[1] != "dark" || got[2] != dark {
		t.Errorf("after a reload: %v, want dark kept on a light device", got)
	}
	t.Logf("screenshot: %s", screenshot(t, b, "ui-theme-dark.png"))
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}

// TestBrowserLongAnswerPointsToTable: an answer cut short, over a result
// too long to show unfolded (30 todos), says so and points to the whole
// table, which one click opens and brings into view. Before, the answer
// ended mid-word with nothing pointing to the folded table.
func TestBrowserLongAnswerPointsToTable(t *testing.T) {
	llm := newFakeLLM(t,
		call("mcp_todo", map[string]any{"action": "execute", "tool_name": "list_todos", "tool_inputs": map[string]any{}}),
		answer("Your todos: "+strings.Repeat("todo number something, ", 40)+"tod… (cut)"))
	s := startService(t, serveOptions{Env: llm.Env()})
	for i := range 30 {
		if code, body := do(t, "POST", s.URL+"/api/servers/todo/execute", "", map[string]any{
			"tool_name": "create_todo", "tool_inputs": map[string]any{"title": fmt.Sprintf("todo %d", i)}}); code != 200 {
			t.Fatalf("create todo %d: %d %v", i, code, body)
		}
	}
	b := newBrowser(t, browserTimeout)
	b.do("open the page",
		chromedp.Navigate(s.URL+"/tree/alice/c1"),
		waitJS(`document.body.dataset.live === "live" && document.body.dataset.state === "idle"`),
	)
	ask(b, "list my todos")
	b.do("the run ends", waitJS(lastTurn+`.querySelector('[data-type="completed"]') !== null && document.body.dataset.state === "idle"`))
	got := eval[map[string]any](b, "the answer's pointer", `(() => {
		const d = `+lastTurn+`.querySelector('details.result[data-type="result"]');
		const src = `+lastTurn+`.querySelector('.answer[data-type="text"] .answer-sources');
		return {folded: d && !d.open, text: src?.textContent, cut: src?.dataset.cut};
	})()`)
	if got["folded"] != true || got["cut"] != "true" || !strings.Contains(fmt.Sprint(got["text"]), "the table of 30 rows") {
		t.Fatalf("the cut answer over a folded table: %v; want a pointer to the table of 30 rows", got)
	}
	b.do("follow it",
		clickNode(`#chat .turn:last-child .answer-sources button.show-result`),
		waitJS(lastTurn+`.querySelector('details.result[data-type="result"]').open`),
	)
	seen := eval[map[string]any](b, "the table", `(() => {
		const d = `+lastTurn+`.querySelector('details.result[data-type="result"]');
		const r = d.getBoundingClientRect(), c = document.querySelector("#chat").getBoundingClientRect();
		return {inView: r.top >= c.top - 1 && r.top < c.bottom, focused: document.activeElement === d.querySelector("summary"),
			rows: d.querySelectorAll("tbody tr").length};
	})()`)
	if seen["inView"] != true || seen["focused"] != true || seen["rows"] != 30.0 {
		t.Errorf("after the click the table is %v; want it open, in view, focused, with 30 rows", seen)
	}
	t.Logf("screenshot: %s", screenshot(t, b, "ui-long-answer.png"))
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}

// TestBrowserNewConversationFollowsSettings: a conversation nobody has
// asked anything yet is not created, so it takes the tree the agent
// settings name, and its page shows that tree as soon as they are saved.
func TestBrowserNewConversationFollowsSettings(t *testing.T) {
	s := startService(t, serveOptions{Env: newFakeLLM(t).Env()})
	b := newBrowser(t, browserTimeout)
	b.do("open a new conversation; change the tree new ones start with",
		chromedp.Navigate(s.URL+"/tree/alice/fresh"),
		waitJS(`document.body.dataset.state === "idle"`),
		chromedp.WaitVisible(css(`#tree .node[data-id="text_response"]`)),
		chromedp.Click(css("#settings-button")),
		waitJS(`document.querySelector("#settings-mode").value === "one_branch"`),
		chromedp.SetValue(css("#settings-mode"), "empty"),
		chromedp.Click(css("#settings-save")),
		waitJS(`document.querySelector("#settings-status").dataset.ok === "true"`),
		chromedp.Click(css("#settings-close")),
		waitJS(`!document.querySelector('#tree .node[data-id="text_response"]') && !!document.querySelector('#tree .node[data-id="mcp_todo"]')`),
	)
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}
