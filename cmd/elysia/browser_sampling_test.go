package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/elysia-go/elysia/internal/testenv"
)

// TestBrowserSamplingApproval: server-everything asks for sampling during
// a call from the chat, with "sampling": true (ask). The request (system
// prompt, message, max tokens) is shown with Approve / Deny before the
// model is asked; the model's reply is shown in an editable box, and the
// edited reply is what the server gets. A second request is denied: the
// model is not asked and the server is told the user declined.
func TestBrowserSamplingApproval(t *testing.T) {
	sample := call("mcp_everything", map[string]any{"action": "execute", "tool_name": "trigger-sampling-request",
		"tool_inputs": map[string]any{"prompt": "a haiku about <b>ponds</b>"}})
	llm := newFakeLLM(t, sample, reply{Content: "an old silent pond"}, answer("here it is"), sample, answer("as you wish"))
	s := everythingService(t, llm)
	b := newBrowser(t, 3*browserTimeout)
	openEverythingPage(b, s, "alice")

	// 1. The request, before the model is asked.
	ask(b, "write me a haiku")
	req := `#chat .elicitation[data-mode="sampling"][data-stage="request"][data-state="open"]`
	b.do("the request", chromedp.WaitVisible(css(req+` button.accept`)))
	got := eval[map[string]any](b, "the request shown", `(() => {
		const c = document.querySelector(`+jsString(req)+`);
		return {
			system: c.querySelector(".sampling-system pre").textContent,
			message: c.querySelector(".sampling-message pre").textContent,
			role: c.querySelector(".sampling-message").dataset.role,
			max: c.querySelector(".sampling-max-tokens").textContent,
			bold: c.querySelectorAll("b").length,
			buttons: [...c.querySelectorAll("button")].map((b) => b.textContent.trim()).join(","),
		};
	})()`)
	for k, w := range map[string]any{"system": "You are a helpful test server.", "message": "Resource trigger-sampling-request context: a haiku about <b>ponds</b>",
		"role": "user", "max": "Max tokens: 100", "bold": 0.0, "buttons": "Deny,Approve"} {
		if got[k] != w {
			t.Errorf("the request's %s = %v, want %v", k, got[k], w)
		}
	}
	if n := len(llm.Requests()); n != 1 {
		t.Errorf("the model was asked %d times before the approval, want 1 (the decision)", n)
	}
	t.Logf("screenshot: %s", screenshot(t, b, "ui-sampling-approval.png"))
	b.do("approve", clickNode(req+` button.accept`))

	// 2. The reply, editable, before it goes back.
	rep := `#chat .elicitation[data-mode="sampling"][data-stage="reply"][data-state="open"]`
	b.do("the reply", chromedp.WaitVisible(css(rep+` textarea.sampling-reply`)))
	if v := eval[string](b, "the reply shown", `document.querySelector(`+jsString(rep+` textarea`)+`).value`); v != "an old silent pond" {
		t.Errorf("the reply box holds %q, want the model's reply", v)
	}
	t.Logf("screenshot: %s", screenshot(t, b, "ui-sampling-reply.png"))
	b.do("edit and send",
		retype(rep+` textarea`, "a frog jumps in"),
		clickNode(rep+` button.accept`),
		waitJS(lastTurn+`.querySelector('[data-type="completed"]') !== null && document.body.dataset.state === "idle"`),
	)
	result := eval[string](b, "result", `[...`+lastTurn+`.querySelectorAll('[data-type="result"]')].map((e) => e.textContent).join("\n")`)
	if !strings.Contains(result, "a frog jumps in") || strings.Contains(result, "silent pond") {
		t.Errorf("the server got %q, want the edited reply", result)
	}

	// 3. Denied: the model is not asked, the server hears the user declined.
	before := len(llm.Requests())
	ask(b, "another one")
	b.do("deny",
		clickNode(`#chat .turn:last-child .elicitation[data-mode="sampling"][data-stage="request"][data-state="open"] button.decline`),
		waitJS(lastTurn+`.querySelector('[data-type="completed"]') !== null && document.body.dataset.state === "idle"`),
	)
	if text := eval[string](b, "denied turn", lastTurn+`.textContent`); !strings.Contains(text, "declined") {
		t.Errorf("the turn after Deny says %q, want the user declined", text)
	}
	if n := len(llm.Requests()) - before; n != 2 {
		t.Errorf("the model was asked %d times in the denied turn, want 2 (decisions only)", n)
	}

	// 4. Reopened, the conversation shows what was asked, with nothing to
	// answer any more.
	openEverythingPage(b, s, "alice")
	past := `#chat .elicitation[data-mode="sampling"][data-state="past"]`
	b.do("the past requests", chromedp.WaitVisible(css(past+` .sampling-message pre`)))
	if n := eval[float64](b, "past cards", `document.querySelectorAll(`+jsString(past)+`).length + document.querySelectorAll("#chat .elicitation button").length * 100`); n != 3 {
		t.Errorf("reopened: %v (past cards + 100 × buttons), want 3 past cards and no button", n)
	}
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}

// TestBrowserSamplingAuto: with "sampling": "auto" the model answers
// unattended, and the chat shows a line that expands to the request and
// the reply.
func TestBrowserSamplingAuto(t *testing.T) {
	sample := call("mcp_everything", map[string]any{"action": "execute", "tool_name": "trigger-sampling-request",
		"tool_inputs": map[string]any{"prompt": "a haiku"}})
	llm := newFakeLLM(t, sample, reply{Content: "an old silent pond"}, answer("here it is"))
	s := startService(t, serveOptions{Env: llm.Env(), Config: fmt.Sprintf(
		`{"servers": {"everything": {"command": "node", "args": [%q, "stdio"], "sampling": "auto"}}}`, testenv.Everything(t))})
	b := newBrowser(t, 3*browserTimeout)
	openEverythingPage(b, s, "alice")
	ask(b, "write me a haiku")
	line := `#chat details.status.sampling`
	b.do("the sampling line",
		waitJS(lastTurn+`.querySelector('[data-type="completed"]') !== null && document.body.dataset.state === "idle"`),
		chromedp.WaitVisible(css(line+` > summary`)),
	)
	if n := eval[float64](b, "no question", `document.querySelectorAll("#chat .elicitation").length`); n != 0 {
		t.Errorf("%v questions in an auto run, want none", n)
	}
	if open := eval[bool](b, "folded", `document.querySelector(`+jsString(line)+`).open`); open {
		t.Error("the sampling line is unfolded at first")
	}
	b.do("unfold", clickNode(line+` > summary`), chromedp.WaitVisible(css(line+` .sampling-reply-text`)))
	got := eval[string](b, "the line's text", `document.querySelector(`+jsString(line)+`).textContent`)
	for _, w := range []string{"You are a helpful test server.", "context: a haiku", "Max tokens: 100", "an old silent pond"} {
		if !strings.Contains(got, w) {
			t.Errorf("the unfolded line lacks %q:\n%s", w, got)
		}
	}
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}

// TestBrowserPanelSampling runs server-everything's sampling tool from the
// server panel, with "sampling": true (ask): the panel shows what the chat
// shows, the request in full (system prompt, messages, max tokens) with
// Approve / Deny before the model is asked, then the model's reply in an
// editable box, and the server gets the edited reply. Before, the panel's
// card had Accept / Decline and nothing else: no request, and no reply.
func TestBrowserPanelSampling(t *testing.T) {
	llm := newFakeLLM(t, reply{Content: "an old silent pond"})
	s := everythingService(t, llm)
	b := newBrowser(t, 2*browserTimeout)
	openEverythingPage(b, s, "alice")
	openPanelTool(b, "trigger-sampling-request")
	req := `#tool-result .elicitation[data-mode="sampling"][data-stage="request"][data-state="open"]`
	b.do("run it; the request shows",
		retype(`#tool-form [name="prompt"]`, "a haiku about <b>ponds</b>"),
		clickNode(`#tool-form-submit`),
		chromedp.WaitVisible(css(req+` button.accept`)),
	)
	got := eval[map[string]any](b, "the request shown", `(() => {
		const c = document.querySelector(`+jsString(req)+`);
		return {
			system: c.querySelector(".sampling-system pre")?.textContent,
			message: c.querySelector(".sampling-message pre")?.textContent,
			role: c.querySelector(".sampling-message")?.dataset.role,
			max: c.querySelector(".sampling-max-tokens")?.textContent,
			bold: c.querySelectorAll("b").length,
			buttons: [...c.querySelectorAll("button")].map((b) => b.textContent.trim()).join(","),
			focused: document.activeElement === c.querySelector("button.accept"),
		};
	})()`)
	for k, w := range map[string]any{"system": "You are a helpful test server.", "message": "Resource trigger-sampling-request context: a haiku about <b>ponds</b>",
		"role": "user", "max": "Max tokens: 100", "bold": 0.0, "buttons": "Deny,Approve", "focused": true} {
		if got[k] != w {
			t.Errorf("the panel's request: %s = %v, want %v", k, got[k], w)
		}
	}
	if n := len(llm.Requests()); n != 0 {
		t.Errorf("the model was asked %d times before the approval, want 0", n)
	}
	t.Logf("screenshot: %s", docScreenshot(t, b, "ui-panel-sampling-request.png"))
	b.do("approve", clickNode(req+` button.accept`))

	rep := `#tool-result .elicitation[data-mode="sampling"][data-stage="reply"][data-state="open"]`
	b.do("the reply", chromedp.WaitVisible(css(rep+` textarea.sampling-reply`)))
	if v := eval[string](b, "the reply shown", `document.querySelector(`+jsString(rep+` textarea`)+`).value`); v != "an old silent pond" {
		t.Errorf("the panel's reply box holds %q, want the model's reply", v)
	}
	t.Logf("screenshot: %s", docScreenshot(t, b, "ui-panel-sampling-reply.png"))
	b.do("edit and send",
		retype(rep+` textarea`, "a frog jumps in"),
		clickNode(rep+` button.accept`),
		waitJS(`["ok", "error"].includes(document.querySelector("#tool-result").dataset.state)`),
	)
	result := eval[string](b, "result", `document.querySelector("#tool-result").textContent`)
	if !strings.Contains(result, "a frog jumps in") || strings.Contains(result, "LLM sampling result: an old silent pond") {
		t.Errorf("the server got %.1500q, want the edited reply", result)
	}
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}

// TestBrowserPanelSamplingAuto: with "sampling": "auto" a run from the
// panel shows the chat's line that expands to the request and the reply.
// Before, the panel showed nothing of it.
func TestBrowserPanelSamplingAuto(t *testing.T) {
	llm := newFakeLLM(t, reply{Content: "an old silent pond"})
	s := startService(t, serveOptions{Env: llm.Env(), Config: fmt.Sprintf(
		`{"servers": {"everything": {"command": "node", "args": [%q, "stdio"], "sampling": "auto"}}}`, testenv.Everything(t))})
	b := newBrowser(t, 2*browserTimeout)
	openEverythingPage(b, s, "alice")
	openPanelTool(b, "trigger-sampling-request")
	line := `#tool-result details.status.sampling`
	b.do("run it",
		retype(`#tool-form [name="prompt"]`, "a haiku"),
		clickNode(`#tool-form-submit`),
		waitJS(`["ok", "error"].includes(document.querySelector("#tool-result").dataset.state)`),
		chromedp.WaitVisible(css(line+` > summary`)),
		clickNode(line+` > summary`),
		chromedp.WaitVisible(css(line+` .sampling-reply-text`)),
	)
	got := eval[string](b, "the line's text", `document.querySelector(`+jsString(line)+`).textContent`)
	for _, w := range []string{"You are a helpful test server.", "context: a haiku", "Max tokens: 100", "an old silent pond"} {
		if !strings.Contains(got, w) {
			t.Errorf("the panel's sampling line lacks %q:\n%s", w, got)
		}
	}
	if n := eval[int](b, "no question", `document.querySelectorAll("#tool-result .elicitation").length`); n != 0 {
		t.Errorf("%d questions in an auto run, want none", n)
	}
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}
