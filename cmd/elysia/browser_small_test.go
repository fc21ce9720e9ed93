package main

import (
	"strings"
	"testing"

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
