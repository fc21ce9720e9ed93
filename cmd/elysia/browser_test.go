package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// browserTimeout bounds everything one browser test does in the page.
const browserTimeout = 60 * time.Second

// css is a CSS selector for chromedp (a plain string would be a DOM search).
type css = chromedp.CSS

// chatAtEnd waits until the chat log shows its latest event (it scrolls
// smoothly, so this takes a moment after the last event).
var chatAtEnd = waitJS(`(() => {
	const c = document.querySelector("#chat");
	return c.scrollHeight - c.scrollTop - c.clientHeight < 2;
})()`)

// retype replaces what an input holds with text, typed as a user would.
// (chromedp.Clear only resets the value attribute, which a field the user
// has typed into no longer follows.)
func retype(sel, text string) chromedp.Action[chromedp.Void] {
	q, _ := json.Marshal(sel)
	steps := []chromedp.Action[chromedp.Void]{
		chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => {
			const el = document.querySelector(%s);
			el.value = "";
			el.dispatchEvent(new Event("input", {bubbles: true}));
		})()`, q)),
	}
	if text != "" {
		steps = append(steps, chromedp.SendKeys(css(sel), text))
	}
	return chromedp.Steps(steps...)
}

// TestBrowserUI drives the web UI in a real headless Chromium against the
// real service (todo-mcp over stdio, the offline planner): the tree and the
// server badge, listing and running tools through the generated form, a 422
// shown on the form, a chat query that walks the tree, and the conversation
// replayed after a reload.
func TestBrowserUI(t *testing.T) {
	s := startService(t, serveOptions{})
	start := time.Now()
	b := newBrowser(t, browserTimeout)
	page := s.URL + "/tree/alice/c1"

	// 1. The page loads and shows the tree and the server.
	resp, err := chromedp.RunResponse(b.ctx, chromedp.Navigate(page))
	if err != nil {
		b.fail("open "+page, err)
	}
	if resp.Status != 200 || !strings.HasPrefix(resp.MimeType, "text/html") {
		t.Fatalf("GET %s in a browser: status %d, %s; want 200 text/html", page, resp.Status, resp.MimeType)
	}
	b.do("tree and server badge",
		chromedp.WaitVisible(css(`#tree .node[data-id="mcp_todo"][data-gateway="true"]`)),
		chromedp.WaitVisible(css(`#tree .node[data-id="text_response"]`)),
		chromedp.WaitVisible(css(`#tree .node[data-id="cited_summarize"]`)),
		chromedp.WaitVisible(css(`#servers-status .server[data-server="todo"]`)),
		waitJS(`document.body.dataset.state === "idle"`),
	)
	ids := eval[[]string](b, "tree options", `[...document.querySelectorAll("#tree .node")].map((n) => n.dataset.id)`)
	if want := []string{"base", "text_response", "cited_summarize", "mcp_todo"}; !slices.Equal(ids, want) {
		t.Errorf("tree nodes = %q, want %q (file order, gateways after the built-ins)", ids, want)
	}
	if st := eval[string](b, "server state", `document.querySelector('#servers-status .server[data-server="todo"]').dataset.state`); st == "" || st == "unknown" {
		t.Errorf("server badge state = %q, want a state from /api/servers", st)
	}

	// 2. The gateway panel lists the server's tools with their schemas.
	b.do("open the gateway and list its tools",
		chromedp.Click(css(`#tree .node[data-id="mcp_todo"] > .row .label`)),
		chromedp.WaitVisible(css(`#tool-panel`)),
		chromedp.Click(css(`#list-tools`)),
		chromedp.WaitVisible(css(`#tool-list li[data-tool="create_todo"]`)),
	)
	tools := eval[[]string](b, "tool names", `[...document.querySelectorAll("#tool-list li[data-tool]")].map((li) => li.dataset.tool)`)
	for _, name := range []string{"create_todo", "list_todos", "update_todo", "search_todos", "delete_todo"} {
		if !slices.Contains(tools, name) {
			t.Errorf("#tool-list = %q, missing %s", tools, name)
		}
	}
	schema := eval[string](b, "create_todo schema", `document.querySelector('#tool-list li[data-tool="create_todo"] details.schema').textContent`)
	for _, want := range []string{`"properties"`, `"title"`, `"priority"`, `"required"`} {
		if !strings.Contains(schema, want) {
			t.Errorf("create_todo's input schema in the panel lacks %s:\n%s", want, schema)
		}
	}

	// 3. Run create_todo through the generated form.
	b.do("run create_todo",
		chromedp.Click(css(`#tool-list li[data-tool="create_todo"] button.run`)),
		chromedp.WaitVisible(css(`#tool-form #field-title`)),
		chromedp.SendKeys(css(`#field-title`), "Buy milk"),
		chromedp.SendKeys(css(`#field-priority`), "2"),
		chromedp.Click(css(`#tool-form-submit`)),
		waitJS(`["ok", "error"].includes(document.querySelector("#tool-result").dataset.state)`),
	)
	if st, text := eval[string](b, "result state", `document.querySelector("#tool-result").dataset.state`),
		eval[string](b, "result text", `document.querySelector("#tool-result").textContent`); st != "ok" || !strings.Contains(text, "Buy milk") {
		t.Errorf("#tool-result: state %q, text %q; want ok mentioning Buy milk", st, text)
	}

	// The server's 422 names the field that broke its rule.
	b.do("priority 9 is refused",
		retype(`#field-priority`, "9"),
		chromedp.Click(css(`#tool-form-submit`)),
		chromedp.WaitVisible(css(`#tool-form-error`)),
		waitJS(`document.querySelector("#tool-result").dataset.state === "invalid"`),
	)
	if msg := eval[string](b, "form error", `document.querySelector("#tool-form-error").textContent`); !strings.Contains(msg, "priority") {
		t.Errorf("#tool-form-error = %q, want the 422 text naming priority", msg)
	}
	if inv := eval[bool](b, "priority marked", `document.querySelector("#field-priority").getAttribute("aria-invalid") === "true"`); !inv {
		t.Errorf("#field-priority is not marked aria-invalid after the 422")
	}
	// An empty required title is caught before anything is sent.
	b.do("empty title is refused",
		retype(`#field-title`, ""),
		retype(`#field-priority`, "2"),
		chromedp.Click(css(`#tool-form-submit`)),
		waitJS(`/title/.test(document.querySelector("#tool-form-error").textContent) && !/priority/.test(document.querySelector("#tool-form-error").textContent)`),
	)

	// 4. A chat query walks the tree and runs the tool.
	b.do("send a query",
		// Record every state the body goes through, so "running" is seen
		// however fast the offline planner is.
		chromedp.Evaluate[chromedp.Void](`window.__states = [];
			new MutationObserver(() => window.__states.push(document.body.dataset.state))
				.observe(document.body, {attributes: true, attributeFilter: ["data-state"]});`),
		chromedp.SendKeys(css(`#query-input`), `create a todo titled "Buy bread" with priority=2`),
		chromedp.Click(css(`#query-send`)),
		waitJS(`window.__states.includes("running") && document.body.dataset.state === "idle"`),
		chromedp.WaitVisible(css(`#chat .answer[data-type="text"]`)),
		chromedp.WaitVisible(css(`#chat [data-type="completed"]`)),
	)
	answer := eval[string](b, "answer", `document.querySelector('#chat .answer[data-type="text"]').textContent.trim()`)
	if !strings.HasPrefix(answer, "[offline planner]") {
		t.Errorf("answer bubble = %q, want it to start with [offline planner]", answer)
	}
	if !eval[bool](b, "path", `!!document.querySelector('#tree .node[data-id="mcp_todo"].on-path')`) {
		t.Errorf("mcp_todo is not marked .on-path after the query; tree: %s",
			eval[string](b, "tree html", `document.querySelector("#tree").outerHTML`))
	}
	if q := eval[string](b, "query bubble", `document.querySelector('#chat .user-query[data-type="query"]')?.textContent ?? ""`); !strings.Contains(q, "Buy bread") {
		t.Errorf("query bubble = %q, want the query", q)
	}
	// The todo really exists on the server.
	code, body := do(t, "POST", s.URL+"/api/servers/todo/execute", "", map[string]any{"tool_name": "search_todos", "tool_inputs": map[string]any{"query": "Buy bread"}})
	if code != 200 || !strings.Contains(fmt.Sprint(body["result"]), "Buy bread") {
		t.Errorf("search_todos Buy bread after the chat query: %d %v", code, body)
	}
	liveTypes := eval[[]string](b, "event types", `[...document.querySelectorAll("#chat [data-type]")].map((e) => e.dataset.type)`)
	b.do("chat scrolled to the end", chatAtEnd)
	shot := screenshot(t, b, "ui-panel.png")
	t.Logf("screenshot (panel open, before the reload): %s", shot)

	// 5. A reload replays the conversation from the saved event log.
	b.do("reload",
		chromedp.Reload(),
		chromedp.WaitVisible(css(`#conversations li[data-conversation="c1"]`)),
		chromedp.WaitVisible(css(`#chat .user-query[data-type="query"]`)),
		chromedp.WaitVisible(css(`#chat .answer[data-type="text"]`)),
		chromedp.WaitVisible(css(`#chat [data-type="completed"]`)),
		waitJS(`document.body.dataset.state === "idle"`),
	)
	replayed := eval[string](b, "replayed answer", `document.querySelector('#chat .answer[data-type="text"]').textContent.trim()`)
	if replayed != answer {
		t.Errorf("replayed answer = %q, want %q", replayed, answer)
	}
	if q := eval[string](b, "replayed query", `document.querySelector('#chat .user-query').textContent`); !strings.Contains(q, "Buy bread") {
		t.Errorf("replayed query bubble = %q, want the query", q)
	}
	if !eval[bool](b, "replayed path", `!!document.querySelector('#tree .node[data-id="mcp_todo"].on-path')`) {
		t.Errorf("mcp_todo is not marked .on-path after the replay")
	}
	replayTypes := eval[[]string](b, "replayed event types", `[...document.querySelectorAll("#chat [data-type]")].map((e) => e.dataset.type)`)
	if !slices.Equal(replayTypes, liveTypes) {
		t.Errorf("replayed events %q differ from the live ones %q", replayTypes, liveTypes)
	}

	// The log lands on its latest event.
	b.do("chat scrolled to the end after the replay", chatAtEnd)

	// 6. The whole page, for a human to look at.
	p := screenshot(t, b, "ui.png")
	t.Logf("screenshot: %s", p)

	if ex := b.exceptions(); len(ex) > 0 {
		t.Errorf("the page threw:\n%s", strings.Join(ex, "\n"))
	}
	t.Logf("browser flow took %v", time.Since(start).Round(time.Millisecond))
}

// TestBrowserAPIKey checks the key dialog: with ELYSIA_API_KEYS set, the page
// shell loads without a key, the UI asks for one, and with it the tree loads.
func TestBrowserAPIKey(t *testing.T) {
	s := startService(t, serveOptions{Env: []string{"ELYSIA_API_KEYS=k1:alice"}})
	start := time.Now()
	if code, _ := do(t, "GET", s.URL+"/tree/alice/c1", "", nil); code != 401 {
		t.Fatalf("GET /tree/alice/c1 without a key: %d, want 401", code)
	}
	b := newBrowser(t, browserTimeout)
	page := s.URL + "/tree/alice/c1"
	resp, err := chromedp.RunResponse(b.ctx, chromedp.Navigate(page))
	if err != nil {
		b.fail("open "+page, err)
	}
	if resp.Status != 200 {
		t.Fatalf("page shell without a key: status %d, want 200", resp.Status)
	}
	b.do("key dialog",
		chromedp.WaitVisible(css(`#api-key`)),
		waitJS(`document.querySelector("#api-key-dialog").open`),
	)
	if n := eval[int](b, "no tree yet", `document.querySelectorAll("#tree .node").length`); n != 0 {
		t.Errorf("%d tree nodes shown before a key was given", n)
	}
	b.do("enter the key",
		chromedp.SendKeys(css(`#api-key`), "k1"),
		chromedp.Click(css(`#api-key-save`)),
		chromedp.WaitVisible(css(`#tree .node[data-id="mcp_todo"]`)),
		chromedp.WaitNotVisible(css(`#api-key-dialog`)),
		chromedp.WaitVisible(css(`#servers-status .server[data-server="todo"]`)),
		chromedp.WaitVisible(css(`#conversations li[data-conversation="c1"]`)),
	)
	if ex := b.exceptions(); len(ex) > 0 {
		t.Errorf("the page threw:\n%s", strings.Join(ex, "\n"))
	}
	t.Logf("auth flow took %v", time.Since(start).Round(time.Millisecond))
}

// screenshot saves a full-page PNG under testdata/screenshots.
func screenshot(t *testing.T, b *browser, name string) string {
	t.Helper()
	var png []byte
	b.do("screenshot "+name, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		var err error
		png, err = chromedp.FullScreenshot(100)(ctx, tg)
		return err
	}))
	p, err := writeScreenshot(name, png)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
