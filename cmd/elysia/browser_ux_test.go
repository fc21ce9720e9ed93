package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// openResources opens the gateway panel of server-everything on its
// Resources tab and waits for the list.
func openResources(b *browser) {
	b.t.Helper()
	b.do("open the resources tab",
		chromedp.Click(css(`#tree .node[data-id="mcp_everything"] > .row .label`)),
		clickNode(`#tab-resources`),
		chromedp.WaitVisible(css(`#resource-list li[data-uri] button.open`)),
	)
}

// TestBrowserResourceContent reads server-everything's resources in the
// gateway panel: a static document shows its text, a template is a form
// with a field per variable that builds the URI, a text template shows
// its text and a blob template a type and size line with a download.
func TestBrowserResourceContent(t *testing.T) {
	s := everythingService(t, newFakeLLM(t))
	b := newBrowserWith(t, browserTimeout, noEmojiFonts(t))
	openEverythingPage(b, s, "alice")
	openResources(b)

	// 1. A static document: its text, not an empty box.
	const doc = `#resource-list li[data-uri^="demo://resource/static/document/"]`
	uri := eval[string](b, "document uri", `document.querySelector(`+jsQuote(doc)+`).dataset.uri`)
	b.do("read "+uri,
		clickNode(doc+` button.open`),
		waitJS(`["ok", "error"].includes(document.querySelector("#resource-content").dataset.state)`),
	)
	text := eval[string](b, "document text", `[...document.querySelectorAll("#resource-content .resource .text-content, #resource-content .resource table")].map((e) => e.textContent).join("")`)
	if len(strings.TrimSpace(text)) < 20 {
		t.Errorf("reading %s shows %q; want the document's text", uri, text)
	}

	// 2. A template: one field per variable; the form builds the URI.
	const textTmpl = `#resource-list li[data-template="demo://resource/dynamic/text/{resourceId}"]`
	b.do("fill the text template",
		chromedp.WaitVisible(css(textTmpl+` input[name="resourceId"]`)),
		chromedp.SendKeys(css(textTmpl+` input[name="resourceId"]`), "7"),
		waitJS(`document.querySelector(`+jsQuote(textTmpl+` .template-uri`)+`).textContent === "demo://resource/dynamic/text/7"`),
		clickNode(textTmpl+` button.open`),
		waitJS(`document.querySelector("#resource-content").dataset.uri === "demo://resource/dynamic/text/7" && document.querySelector("#resource-content").dataset.state === "ok"`),
		waitJS(`document.querySelector("#resource-content .resource .text-content")?.textContent.includes("Resource 7: This is a plaintext resource")`),
	)
	if n := eval[int](b, "raw template inputs", `[...document.querySelectorAll("#resource-list input")].filter((i) => i.value.includes("{")).length`); n != 0 {
		t.Errorf("%d template inputs still hold a raw URI template", n)
	}

	// 3. A blob: its type and size, and a download, never its base64.
	const blobTmpl = `#resource-list li[data-template="demo://resource/dynamic/blob/{resourceId}"]`
	b.do("read a blob",
		chromedp.SendKeys(css(blobTmpl+` input[name="resourceId"]`), "3"),
		clickNode(blobTmpl+` button.open`),
		waitJS(`document.querySelector("#resource-content").dataset.uri === "demo://resource/dynamic/blob/3" && document.querySelector("#resource-content").dataset.state === "ok"`),
		chromedp.WaitVisible(css(`#resource-content .blob-line[data-mime="text/plain"] a.download`)),
	)
	line := eval[string](b, "blob line", `document.querySelector("#resource-content .blob-line").textContent`)
	if !strings.Contains(line, "text/plain") || !strings.Contains(line, " B") {
		t.Errorf("the blob shows %q; want its type and size", line)
	}
	t.Logf("screenshot: %s", screenshot(t, b, "ui-resources.png"))
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}

// TestBrowserToolListFolded: when the model lists a gateway's tools, the
// chat shows one folded line "listed N tools of everything", not every
// tool's card and schema; a click unfolds it.
func TestBrowserToolListFolded(t *testing.T) {
	llm := newFakeLLM(t, call("mcp_everything", map[string]any{"action": "list"}), answer("that is all"))
	s := everythingService(t, llm)
	b := newBrowserWith(t, browserTimeout, noEmojiFonts(t))
	openEverythingPage(b, s, "alice")
	ask(b, "what can you do")
	b.do("the run ends",
		waitJS(lastTurn+`.querySelector('[data-type="completed"]') !== null && document.body.dataset.state === "idle"`),
	)
	got := eval[[]string](b, "the listing", `(() => {
		const r = `+lastTurn+`.querySelector('[data-type="result"]');
		if (!r) return ["no result"];
		const visible = [...r.querySelectorAll(".tool-item")].filter((e) => e.checkVisibility()).length;
		return [r.querySelector("summary")?.textContent ?? "", String(r.open), String(visible), r.innerText];
	})()`)
	if len(got) != 4 {
		t.Fatalf("listing: %q", got)
	}
	if !regexp.MustCompile(`^\s*listed \d+ tools of everything\s*$`).MatchString(got[0]) {
		t.Errorf("the listing's line says %q; want \"listed N tools of everything\"", got[0])
	}
	if got[1] != "false" || got[2] != "0" {
		t.Errorf("the listing is open=%s with %s tool cards shown; want it folded", got[1], got[2])
	}
	if strings.Contains(got[3], "mcp_everything_list_") {
		t.Errorf("the chat shows reference ids: %.300q", got[3])
	}
	b.do("unfold",
		clickNode(`#chat [data-type="result"] > summary`),
		chromedp.WaitVisible(css(`#chat [data-type="result"] .tool-item[data-tool="echo"]`)),
	)
}

// TestBrowserConnectionLost kills the service in the middle of a long
// tool call: the turn's clock stops, Stop goes away, the status says the
// connection is lost and no server badge stays green.
func TestBrowserConnectionLost(t *testing.T) {
	llm := newFakeLLM(t,
		call("mcp_everything", map[string]any{"action": "execute", "tool_name": "trigger-long-running-operation",
			"tool_inputs": map[string]any{"duration": 60, "steps": 60}}),
		answer("never"))
	s := everythingService(t, llm)
	b := newBrowserWith(t, 2*browserTimeout, noEmojiFonts(t))
	openEverythingPage(b, s, "alice")
	ask(b, "run long")
	b.do("the call runs",
		chromedp.WaitVisible(css(`#chat .tool-progress[data-state="running"] progress`)),
		chromedp.WaitVisible(css(`#tree .node[data-id="mcp_everything"] .badge[data-state="connected"]`)),
	)
	if err := s.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	b.do("the page gives up on the query",
		waitJS(`document.body.dataset.state === "idle"`),
		chromedp.WaitNotVisible(css(`#query-stop`)),
		waitJS(`document.querySelector("#connection").dataset.state === "offline"`),
	)
	got := eval[[]string](b, "what is left", `[
		String(document.querySelectorAll("#chat .turn.active, #chat .turn .progress").length),
		[...document.querySelectorAll("#servers-status .server, #tree .badge")].map((e) => e.dataset.state).join(","),
		document.querySelector("#chat .tool-progress").dataset.state,
		document.querySelector("#connection").textContent,
	]`)
	if got[0] != "0" {
		t.Errorf("%s turns still show a running clock", got[0])
	}
	if strings.Contains(got[1], "connected") || got[1] == "" {
		t.Errorf("server badges after the service died: %q; want every one unknown", got[1])
	}
	if got[2] == "running" {
		t.Error("the tool call still shows as running")
	}
	if !strings.Contains(got[3], "lost") {
		t.Errorf("#connection says %q; want it to say the connection is lost", got[3])
	}
	t.Logf("screenshot: %s", screenshot(t, b, "ui-connection-lost.png"))
}

// TestBrowserResultsReadable: a todo listing shows no _REF_ID column (each
// row keeps its id as data-ref), tags as whole chips rather than raw JSON,
// and a Markdown table in the answer as a table, not pipes.
func TestBrowserResultsReadable(t *testing.T) {
	llm := newFakeLLM(t,
		call("mcp_todo", map[string]any{"action": "execute", "tool_name": "create_todo",
			"tool_inputs": map[string]any{"title": "Buy oat milk", "tags": []string{"groceries", "weekly-shopping-list"}}}),
		call("mcp_todo", map[string]any{"action": "execute", "tool_name": "list_todos", "tool_inputs": map[string]any{}}),
		answer("Your todos:\n\n| Title | Priority |\n|---|---:|\n| Buy oat milk | 3 |\n| <img src=x> \\| `a|b` | 1 |"))
	s := startService(t, serveOptions{Env: llm.Env()})
	b := newBrowserWith(t, browserTimeout, noEmojiFonts(t))
	b.do("open the page",
		chromedp.Navigate(s.URL+"/tree/alice/c1"),
		waitJS(`document.body.dataset.live === "live" && document.body.dataset.state === "idle"`),
	)
	ask(b, "list my todos")
	b.do("the run ends",
		waitJS(lastTurn+`.querySelector('[data-type="completed"]') !== null && document.body.dataset.state === "idle"`),
	)
	got := eval[[]string](b, "the tables", `(() => {
		const tables = [...document.querySelectorAll("#chat table.data")];
		const heads = tables.flatMap((t) => [...t.querySelectorAll("th")].map((th) => th.textContent));
		const refs = tables.flatMap((t) => [...t.querySelectorAll("tbody tr")].map((tr) => tr.dataset.ref || ""));
		const tags = [...document.querySelectorAll("#chat table.data td .tag")].map((e) => e.textContent);
		const text = tables.map((t) => t.textContent).join(" ");
		return [heads.join(","), refs.join(","), tags.join(","), text];
	})()`)
	if strings.Contains(got[0], "_REF_ID") || got[0] == "" {
		t.Errorf("table headers %q; want the todo's fields without _REF_ID", got[0])
	}
	if got[1] == "" || strings.Contains(got[1], ",,") || strings.HasPrefix(got[1], ",") {
		t.Errorf("rows' data-ref %q; want every row to keep its reference id", got[1])
	}
	if !strings.Contains(got[2], "groceries") || !strings.Contains(got[2], "weekly-shopping-list") {
		t.Errorf("tag chips %q; want groceries and weekly-shopping-list", got[2])
	}
	if strings.Contains(got[3], `["`) {
		t.Errorf("a table shows raw JSON: %.300q", got[3])
	}
	answer := eval[[]string](b, "the answer", `(() => {
		const a = `+lastTurn+`.querySelector('.answer[data-type="text"]');
		const cells = [...a.querySelectorAll("table td")];
		return [a.textContent, [...a.querySelectorAll("table th")].map((e) => e.textContent).join(","),
			cells.map((e) => e.textContent).join(","), cells.map((e) => e.dataset.align || "").join(","),
			String(a.querySelectorAll("img").length)];
	})()`)
	if strings.Contains(answer[0], "|---") || answer[1] != "Title,Priority" {
		t.Errorf("the answer's table: text %q, headers %q; want a table", answer[0], answer[1])
	}
	if want := "Buy oat milk,3,<img src=x> | a|b,1"; answer[2] != want {
		t.Errorf("the answer's cells %q; want %q", answer[2], want)
	}
	if answer[3] != ",right,,right" || answer[4] != "0" {
		t.Errorf("cell alignment %q, images %s; want the second column right-aligned and no image", answer[3], answer[4])
	}
	t.Logf("screenshot: %s", screenshot(t, b, "ui-results.png"))
}

// inView is a JavaScript function that reports whether an element's top
// is inside the window and inside the gateway panel's scrolled area.
const inView = `((el) => {
	if (!el) return false;
	const r = el.getBoundingClientRect(), p = document.querySelector("#tool-panel").getBoundingClientRect();
	return r.height > 0 && r.top >= Math.max(0, p.top) - 1 && r.top < Math.min(innerHeight, p.bottom);
})`

// TestBrowserPanelNearTheClick: in the gateway panel, a tool's form opens
// in its card where the click was and in view, its button says Run like
// the card's, and the result comes into view; the Logs tab follows the
// server's log by itself and filters it by level.
func TestBrowserPanelNearTheClick(t *testing.T) {
	s := everythingService(t, newFakeLLM(t))
	b := newBrowserWith(t, 2*browserTimeout, noEmojiFonts(t))
	openEverythingPage(b, s, "alice")
	listEverythingTools(b)

	// 1. The last tool's form: in its card, in view.
	last := eval[string](b, "last tool", `[...document.querySelectorAll("#tool-list li[data-tool]")].at(-1).dataset.tool`)
	b.do("open "+last,
		clickNode(`#tool-list li[data-tool="`+last+`"] .run`),
		chromedp.WaitVisible(css(`#tool-form-submit`)),
		waitJS(inView+`(document.querySelector("#tool-form"))`),
	)
	if inCard := eval[bool](b, "form in card", `document.querySelector("#tool-form").closest("li[data-tool]")?.dataset.tool === `+jsQuote(last)); !inCard {
		t.Errorf("the form of %s opens away from its card", last)
	}
	if txt := eval[string](b, "submit text", `document.querySelector("#tool-form-submit").textContent.trim()`); txt != "Run" {
		t.Errorf("the form's button says %q; want Run, as the card's button", txt)
	}

	// 2. Simulated logging: run it, and its result comes into view.
	b.do("start the server's logging",
		clickNode(`#tool-list li[data-tool="toggle-simulated-logging"] .run`),
		chromedp.WaitVisible(css(`#tool-form-submit`)),
		clickNode(`#tool-form-submit`),
		waitJS(`document.querySelector("#tool-result").dataset.state === "ok"`),
		waitJS(inView+`(document.querySelector("#tool-result"))`),
	)

	// 3. Logs: new lines arrive without a click; the level hides the rest.
	b.do("open the logs",
		clickNode(`#tab-logs`),
		waitJS(`/message/.test(document.querySelector("#logs-status").textContent)`),
	)
	n := eval[int](b, "log lines", `document.querySelectorAll("#server-logs li").length`)
	b.do("the log grows by itself",
		waitJS(`document.querySelectorAll("#server-logs li").length > `+strconv.Itoa(n)),
		chromedp.SetValue(css(`#logs-level`), "error"),
		chromedp.Evaluate[chromedp.Void](`void document.querySelector("#logs-level").dispatchEvent(new Event("change"))`),
	)
	shown := eval[[]string](b, "shown levels", `[...document.querySelectorAll("#server-logs li")].filter((li) => !li.hidden).map((li) => li.dataset.level)`)
	for _, lv := range shown {
		if lv != "error" && lv != "critical" && lv != "alert" && lv != "emergency" {
			t.Errorf("level error shows a %q line", lv)
		}
	}
	t.Logf("screenshot: %s", screenshot(t, b, "ui-panel-logs.png"))
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}

// TestBrowserPageBasics: a browser opening / lands on a new conversation
// of ELYSIA_USER, which the list calls "New conversation", not its id; the
// header names the model; a keyless service offers no API-key button; the
// gateway panel says "1 call".
func TestBrowserPageBasics(t *testing.T) {
	llm := newFakeLLM(t)
	s := startService(t, serveOptions{Env: append(llm.Env(), "ELYSIA_USER=carol")})
	b := newBrowserWith(t, browserTimeout, noEmojiFonts(t))
	b.do("open /",
		chromedp.Navigate(s.URL+"/"),
		waitJS(`document.body.dataset.live === "live" && document.body.dataset.state === "idle"`),
		waitJS(`/^\/tree\/carol\/c-[0-9a-f]{16}$/.test(location.pathname)`),
		waitJS(`document.querySelector("#conversations li.current .conv-title") !== null`),
	)
	got := eval[[]string](b, "the header", `[
		document.querySelector("#conversations li.current .conv-title").textContent,
		document.querySelector("#model-name")?.checkVisibility() ? document.querySelector("#model-name").textContent : "",
		String(document.querySelector("#api-key-button").checkVisibility()),
	]`)
	if got[0] != "New conversation" {
		t.Errorf("the new conversation is listed as %q; want \"New conversation\"", got[0])
	}
	if !strings.Contains(got[1], "scripted") {
		t.Errorf("the header names the model as %q; want it to say scripted", got[1])
	}
	if got[2] != "false" {
		t.Error("a keyless service shows the API-key button")
	}
	b.do("list the todo tools",
		chromedp.Click(css(`#tree .node[data-id="mcp_todo"] > .row .label`)),
		clickNode(`#list-tools`),
		chromedp.WaitVisible(css(`#tool-list li[data-tool="create_todo"]`)),
		clickNode(`#tool-list li[data-tool="list_todos"] .run`),
		clickNode(`#tool-form-submit`),
		waitJS(`document.querySelector("#tool-result").dataset.state === "ok"`),
		// The list may count as a call too (a stale cache): 1 or 2.
		waitJS(`/ · \d+ calls?/.test(document.querySelector("#tool-panel-info .server-line").textContent)`),
	)
	if info := eval[string](b, "calls", `document.querySelector("#tool-panel-info .server-line").textContent`); !regexp.MustCompile(` · (1 call|[02-9] calls)$`).MatchString(info) {
		t.Errorf("the panel says %q; want \"1 call\" or \"2 calls\"", info)
	}
	t.Logf("screenshot: %s", screenshot(t, b, "ui-page-basics.png"))
}
