package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/elysia-go/elysia/internal/testenv"
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
		clickNode(`#list-tools`),
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
		clickNode(`#tool-list li[data-tool="create_todo"] button.run`),
		chromedp.WaitVisible(css(`#tool-form #field-title`)),
		chromedp.SendKeys(css(`#field-title`), "Buy milk"),
		chromedp.SendKeys(css(`#field-priority`), "2"),
		clickNode(`#tool-form-submit`),
		waitJS(`["ok", "error"].includes(document.querySelector("#tool-result").dataset.state)`),
	)
	if st, text := eval[string](b, "result state", `document.querySelector("#tool-result").dataset.state`),
		eval[string](b, "result text", `document.querySelector("#tool-result").textContent`); st != "ok" || !strings.Contains(text, "Buy milk") {
		t.Errorf("#tool-result: state %q, text %q; want ok mentioning Buy milk", st, text)
	}

	// The server's 422 names the field that broke its rule.
	b.do("priority 9 is refused",
		retype(`#field-priority`, "9"),
		clickNode(`#tool-form-submit`),
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
		clickNode(`#tool-form-submit`),
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

	// The only error the console may show is the 422 the test asked for.
	if errs := b.consoleErrors("status of 422"); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
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

// docScreenshot is screenshot for a picture docs/ shows: when
// ELYSIA_SCREENSHOTS names a folder (relative to the repository's root,
// e.g. docs/screenshots), the PNG is written there too, so that running
// the test with it set refreshes the picture.
func docScreenshot(t *testing.T, b *browser, name string) string {
	t.Helper()
	p := screenshot(t, b, name)
	dir := os.Getenv("ELYSIA_SCREENSHOTS")
	if dir == "" {
		return p
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(testenv.RepoRoot(), dir)
	}
	png, err := os.ReadFile(p)
	if err == nil {
		err = os.MkdirAll(dir, 0o755)
	}
	if err == nil {
		p = filepath.Join(dir, name)
		err = os.WriteFile(p, png, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// idleWindow is how long TestBrowserLive watches an idle page for requests.
// It is not a wait for something to happen: the page must send nothing in
// it, and the old UI's poll every 4 s would have sent two.
const idleWindow = 6 * time.Second

// countingProxy stands between the browser and the service and records
// every request the page sends, so a test can tell that an idle page sends
// none.
type countingProxy struct {
	URL string

	mu   sync.Mutex // guards reqs
	reqs []string   // "METHOD /path", in arrival order
}

func newCountingProxy(tb testing.TB, target string) *countingProxy {
	tb.Helper()
	u, err := url.Parse(target)
	if err != nil {
		tb.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	// Streams end when the browser closes; that is no error worth a line.
	rp.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) { w.WriteHeader(http.StatusBadGateway) }
	p := &countingProxy{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.reqs = append(p.reqs, r.Method+" "+r.URL.Path)
		p.mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	tb.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// mark returns a position in the record, for since.
func (p *countingProxy) mark() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.reqs)
}

// since returns the requests recorded after mark.
func (p *countingProxy) since(mark int) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.reqs[mark:]...)
}

// checkIcons fails the test unless every icon of the page is an inline SVG
// with a size, and no text of the page needs an emoji font.
func checkIcons(t *testing.T, b *browser) {
	t.Helper()
	problems := eval[[]string](b, "icons", `(() => {
		const out = [];
		const sized = (el) => { const r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0; };
		// Controls that must show an icon, each one an <svg> with a size
		// when the control is shown (the gateway panel may be closed).
		const holders = [
			"#api-key-button", "#tree-refresh", "#new-conversation", ".topbar .brand",
			"#conversations li.current button.delete", "#tool-panel-close",
			"#tree .node.branch > .row .twisty", "#tool-list li .run",
		];
		for (const sel of holders) {
			const els = document.querySelectorAll(sel);
			if (!els.length) out.push(sel + ": not found");
			for (const el of els) {
				const svg = el.querySelector("svg.icon");
				if (!svg) out.push(sel + ": no svg.icon in " + el.outerHTML.slice(0, 120));
				else if (el.getClientRects().length && !sized(svg)) out.push(sel + ": its icon has no size");
			}
		}
		const nodes = document.querySelectorAll("#tree .node");
		if (!nodes.length) out.push("#tree: no nodes");
		for (const n of nodes) {
			const svg = n.querySelector(":scope > .row .node-icon > svg.icon");
			if (!svg || !sized(svg)) out.push("#tree node " + n.dataset.id + ": no icon with a size");
		}
		// Every icon shown has a size (hidden ones, such as the narrow-screen
		// menu button, have no box at all).
		for (const svg of document.querySelectorAll("svg.icon")) {
			if (svg.getClientRects().length && !sized(svg)) out.push("an icon without a size: " + svg.outerHTML.slice(0, 80));
		}
		const text = document.body.innerText;
		const m = text.match(/[\p{Extended_Pictographic}\u{FE0F}]/u);
		if (m) out.push("text needs an emoji font: " + JSON.stringify(m[0]) + " in " + JSON.stringify(text.slice(Math.max(0, m.index - 40), m.index + 40)));
		return out;
	})()`)
	for _, p := range problems {
		t.Error(p)
	}
}

// openGatewayTools opens the todo gateway's panel and lists its tools, so
// that the panel's icons are on the page too.
func openGatewayTools(b *browser) {
	b.do("list the gateway's tools",
		chromedp.Click(css(`#tree .node[data-id="mcp_todo"] > .row .label`)),
		chromedp.WaitVisible(css(`#tool-panel`)),
		clickNode(`#list-tools`),
		chromedp.WaitVisible(css(`#tool-list li[data-tool="create_todo"] .run`)),
	)
}

// TestBrowserIconsWithoutEmojiFont checks the page on a machine without an
// emoji font: Chromium runs with a fontconfig that hides it, and every icon
// must still be drawn.
func TestBrowserIconsWithoutEmojiFont(t *testing.T) {
	s := startService(t, serveOptions{})
	b := newBrowserWith(t, browserTimeout, noEmojiFonts(t))
	b.do("open the page",
		chromedp.Navigate(s.URL+"/tree/alice/c1"),
		chromedp.WaitVisible(css(`#tree .node[data-id="mcp_todo"]`)),
		chromedp.WaitVisible(css(`#conversations li[data-conversation="c1"]`)),
		waitJS(`document.body.dataset.live === "live"`),
	)
	openGatewayTools(b)
	checkIcons(t, b)
	t.Logf("screenshot without an emoji font: %s", screenshot(t, b, "ui-no-emoji-font.png"))
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}

// TestBrowserLive drives the page as it stays open: every icon is drawn
// (with the emoji font installed, as with TestBrowserIconsWithoutEmojiFont
// without it), a server added to mcp.json shows up through the event
// stream with no request from the page, a suggestion chip sends its query
// and the status goes back to idle after completed, the page then sends no
// request at all while idle, and the console stays free of errors.
func TestBrowserLive(t *testing.T) {
	if !hasEmojiFont() {
		testenv.Missing(t, "no emoji font (apt-get install -y fonts-noto-color-emoji)")
	}
	s := startService(t, serveOptions{})
	proxy := newCountingProxy(t, s.URL)
	b := newBrowser(t, 2*browserTimeout)
	b.do("open the page",
		chromedp.Navigate(proxy.URL+"/tree/alice/c1"),
		chromedp.WaitVisible(css(`#tree .node[data-id="mcp_todo"]`)),
		chromedp.WaitVisible(css(`#servers-status .server[data-server="todo"]`)),
		chromedp.WaitVisible(css(`#conversations li[data-conversation="c1"]`)),
		waitJS(`document.body.dataset.live === "live" && document.body.dataset.state === "idle"`),
	)
	if got := proxy.since(0); !slices.Contains(got, "GET /events/alice/c1") {
		t.Errorf("the page's requests %q do not open the event stream", got)
	}
	openGatewayTools(b)
	checkIcons(t, b)
	b.do("close the panel", clickNode(`#tool-panel-close`), chromedp.WaitNotVisible(css(`#tool-panel`)))

	// 1. A server added to mcp.json appears in the open page, pushed.
	mark := proxy.mark()
	notes := fmt.Sprintf(`"notes": {"type": "stdio", "command": %q, "env": {"TODO_DB": "./data/notes.db"}, "cwd": "."}`, testenv.TodoMCP(t))
	cfg := strings.Replace(defaultConfig(t), `{"servers": {`, `{"servers": {`+notes+`, `, 1)
	tmp := filepath.Join(s.Dir, "mcp.json.tmp")
	if err := os.WriteFile(tmp, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, s.Config); err != nil {
		t.Fatal(err)
	}
	b.do("the new server appears",
		chromedp.WaitVisible(css(`#tree .node[data-id="mcp_notes"][data-gateway="true"]`)),
		chromedp.WaitVisible(css(`#servers-status .server[data-server="notes"]`)),
	)
	if got := proxy.since(mark); len(got) > 0 {
		t.Errorf("the page sent %q to learn about the new server; want the event stream to bring it", got)
	}
	checkIcons(t, b)

	// 2. A suggestion chip sends its query, and the status ends idle.
	chip := eval[string](b, "first chip", `document.querySelector("#chat .suggestion").textContent`)
	b.do("click a suggestion chip",
		chromedp.Evaluate[chromedp.Void](`window.__status = [];
			new MutationObserver(() => window.__status.push(document.querySelector("#connection").dataset.state))
				.observe(document.querySelector("#connection"), {attributes: true, attributeFilter: ["data-state"]});`),
		chromedp.Click(css(`#chat .suggestion`)),
		chromedp.WaitVisible(css(`#chat [data-type="completed"]`)),
		waitJS(`document.body.dataset.state === "idle" && document.querySelector("#connection").dataset.state === "idle"`),
	)
	if q := eval[string](b, "query bubble", `document.querySelector('#chat .user-query[data-type="query"]')?.textContent ?? ""`); q != chip {
		t.Errorf("query bubble = %q, want the chip's text %q", q, chip)
	}
	if seen := eval[[]string](b, "status changes", `window.__status`); !slices.Contains(seen, "running") || seen[len(seen)-1] != "idle" {
		t.Errorf("#connection went through %q; want running, then idle at the end", seen)
	}
	if text := eval[string](b, "status text", `document.querySelector("#connection").textContent`); text != "idle" {
		t.Errorf("#connection says %q after completed, want idle", text)
	}
	done := eval[string](b, "duration", `(() => { const d = document.querySelector("#chat .done"); return d.dataset.ms + "|" + d.textContent; })()`)
	ms, text, _ := strings.Cut(done, "|")
	if ms == "" || ms == "undefined" || (!strings.HasSuffix(text, " ms") && !strings.HasSuffix(text, " s")) || strings.Contains(text, " 0.0 s") {
		t.Errorf("the turn ends with %q (data-ms %q); want its measured duration", text, ms)
	}
	b.do("the conversation list has the query's title", waitJS(`!!document.querySelector('#conversations li[data-conversation="c1"] .conv-time')?.textContent`))

	// 3. Idle: no request at all, while the event stream stays open.
	mark = proxy.mark()
	select {
	case <-time.After(idleWindow):
	case <-b.ctx.Done():
		t.Fatal(b.ctx.Err())
	}
	if got := proxy.since(mark); len(got) > 0 {
		t.Errorf("the idle page sent %d requests in %v: %q; want none", len(got), idleWindow, got)
	}
	if live := eval[string](b, "stream state", `document.body.dataset.live`); live != "live" {
		t.Errorf("body[data-live] = %q after the idle window, want live", live)
	}
	t.Logf("screenshot: %s", screenshot(t, b, "ui-live.png"))
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}
