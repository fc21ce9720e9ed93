package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestSavedConfigReachesTheModel saves a default config on the Settings
// routes and checks that the user's next decision opens with its style and
// end goal, another user's does not, and the config survives a restart.
func TestSavedConfigReachesTheModel(t *testing.T) {
	t.Parallel()
	llm := newFakeLLM(t, answer("Fait."), answer("Done."), answer("Fait encore."))
	dir := t.TempDir()
	s := startService(t, serveOptions{Dir: dir, Env: llm.Env()})
	code, body := do(t, http.MethodPost, s.URL+"/user/config/alice/french", "", map[string]any{
		"name": "French", "default": true,
		"config": map[string]any{"style": "Answer in French.", "end_goal": "The user has an answer."},
	})
	wantStatus(t, "save a config", code, body, http.StatusOK)

	system := func(i int) string {
		t.Helper()
		reqs := llm.Requests()
		if len(reqs) <= i || len(reqs[i].Messages) == 0 || reqs[i].Messages[0].Role != "system" {
			t.Fatalf("request %d has no system message: %+v", i, reqs)
		}
		return reqs[i].Messages[0].Content
	}
	if res := querySSE(t, t.Context(), s.URL, "", "alice", "c1", "hello"); res.Status != http.StatusOK {
		t.Fatalf("alice's query: %d", res.Status)
	}
	if got := system(0); !strings.HasPrefix(got, "Your end goal: The user has an answer.\nWrite your messages to the user in this style: Answer in French.\n\n") {
		t.Errorf("alice's system message:\n%s", got)
	}
	if res := querySSE(t, t.Context(), s.URL, "", "bob", "c1", "hello"); res.Status != http.StatusOK {
		t.Fatalf("bob's query: %d", res.Status)
	}
	if got := system(1); strings.Contains(got, "French") || strings.Contains(got, "end goal") {
		t.Errorf("bob's system message has alice's config:\n%s", got)
	}

	s.Stop(t)
	s = startService(t, serveOptions{Dir: dir, Env: llm.Env()})
	if res := querySSE(t, t.Context(), s.URL, "", "alice", "c2", "hello again"); res.Status != http.StatusOK {
		t.Fatalf("alice's query after a restart: %d", res.Status)
	}
	if got := system(2); !strings.Contains(got, "Answer in French.") {
		t.Errorf("after a restart alice's system message:\n%s", got)
	}
}

// TestBrowserAgentSettings sets alice's agent settings in the UI's dialog:
// her next decision opens with her style and end goal, her next new
// conversation starts with the tree she chose, the dialog shows them again
// on another page, and a field too long is refused with the server's
// message, leaving what was saved.
func TestBrowserAgentSettings(t *testing.T) {
	llm := newFakeLLM(t, answer("Arr, done."))
	s := startService(t, serveOptions{Env: llm.Env()})
	b := newBrowser(t, browserTimeout)
	// c1 exists before the settings change (a page alone creates nothing):
	// it keeps the tree it was made with.
	if code, _ := do(t, http.MethodGet, s.URL+"/tree/alice/c1", "", nil); code != http.StatusOK {
		t.Fatalf("create c1: %d", code)
	}
	b.do("open the page and the settings",
		chromedp.Navigate(s.URL+"/tree/alice/c1"),
		waitJS(`document.body.dataset.state === "idle"`),
		chromedp.Click(css("#settings-button")),
		waitJS(`document.querySelector("#settings-style").value === "Informative, polite and friendly."`),
	)
	b.do("edit and save",
		setReactValue("#settings-style", "Answer like a pirate."),
		setReactValue("#settings-end-goal", "The user has a todo list."),
		chromedp.SetValue(css("#settings-mode"), "empty"),
		chromedp.Click(css("#settings-save")),
		waitJS(`document.querySelector("#settings-status").dataset.ok === "true"`),
		chromedp.Click(css("#settings-close")),
	)
	b.do("ask",
		chromedp.SendKeys(css("#query-input"), "hello"),
		chromedp.Click(css("#query-send")),
		waitJS(`document.querySelector("#chat").textContent.includes("Arr, done.")`),
	)
	reqs := llm.Requests()
	if len(reqs) == 0 || !strings.Contains(reqs[0].Messages[0].Content, "Write your messages to the user in this style: Answer like a pirate.") ||
		!strings.Contains(reqs[0].Messages[0].Content, "Your end goal: The user has a todo list.") {
		t.Fatalf("the model's system message does not carry the settings: %+v", reqs)
	}

	b.do("a new conversation starts with the tree the settings name, and they come back",
		chromedp.Navigate(s.URL+"/tree/alice/c2"),
		waitJS(`document.body.dataset.state === "idle"`),
		chromedp.WaitVisible(css(`#tree .node[data-id="mcp_todo"]`)),
		waitJS(`!document.querySelector('#tree .node[data-id="text_response"]')`),
		chromedp.Click(css("#settings-button")),
		waitJS(`document.querySelector("#settings-style").value === "Answer like a pirate." &&
			document.querySelector("#settings-mode").value === "empty"`),
	)
	b.do("a style too long is refused, with the server's reason",
		// Past the field's maxlength, as a script or another client could.
		setReactValue("#settings-style", strings.Repeat("x", 4001)),
		chromedp.Click(css("#settings-save")),
		waitJS(`document.querySelector("#settings-status").dataset.ok === "false" &&
			document.querySelector("#settings-status").textContent.includes("config.style is 4001 bytes long")`),
	)
	code, body := do(t, http.MethodGet, s.URL+"/user/config/alice", "", nil)
	if code != http.StatusOK || get(body, "config", "style") != "Answer like a pirate." {
		t.Errorf("after the refused save, alice's config = %d %v", code, get(body, "config"))
	}
}
