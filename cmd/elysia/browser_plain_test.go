package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserPlainWords: what the gateway writes for the model stays the
// model's, and people get a plain line. A server whose command does not
// exist, called from the chat, shows "broken can't start: ./no-such-server
// not found. Fix its command in mcp.json.", in the chat and in its panel,
// with the gateway's text one click away; a server alice must sign in to
// asks her to sign in, with a Connect button, and calls nothing "failed";
// the panel's header folds the description written for the model. Before,
// a yellow "Retrying after an error" box (nothing is retried) showed the
// error and the text for the model ("tell the user to fix its entry…"),
// and the panel showed the model's description of the gateway.
func TestBrowserPlainWords(t *testing.T) {
	f := newOAuthFixture(t)
	llm := newFakeLLM(t,
		call("mcp_broken", map[string]any{"action": "list"}), answer("broken cannot start"),
		call("mcp_secure", map[string]any{"action": "execute", "tool_name": "whoami", "tool_inputs": map[string]any{}}), answer("sign in first"))
	s := startService(t, serveOptions{Env: llm.Env(), Config: fmt.Sprintf(
		`{"servers": {"broken": {"command": "./no-such-server"}, "secure": {"type": "http", "url": %q, "oauth": {}}}}`, f.rs.URL+"/mcp")})
	b := newBrowser(t, 2*browserTimeout)
	b.do("open the page",
		chromedp.Navigate(s.URL+"/tree/alice/c1"),
		waitJS(`document.body.dataset.live === "live" && document.body.dataset.state === "idle"`),
		chromedp.WaitVisible(css(`#tree .node[data-id="mcp_broken"][data-gateway="true"]`)),
	)
	const wantBroken = "broken can't start: ./no-such-server not found. Fix its command in mcp.json."

	// 1. The chat.
	ask(b, "use broken")
	b.do("the run ends", waitJS(lastTurn+`.querySelector('[data-type="completed"]') !== null && document.body.dataset.state === "idle"`))
	got := eval[map[string]any](b, "the chat's line", `(() => {
		const n = `+lastTurn+`.querySelector('[data-type="self_healing_error"]');
		return {
			problem: n?.dataset.problem, line: n?.querySelector(".plain-line")?.textContent,
			folded: n?.querySelector("details.plain-detail")?.open === false,
			detail: n?.querySelector("details.plain-detail")?.textContent,
			visible: n?.innerText, turn: `+lastTurn+`.innerText,
		};
	})()`)
	if got["problem"] != "config" || got["line"] != wantBroken || got["folded"] != true {
		t.Errorf("the chat shows the broken server as %v", got)
	}
	if d, _ := got["detail"].(string); !strings.Contains(d, "tell the user to fix its entry") || !strings.Contains(d, "no-such-server") {
		t.Errorf("the folded detail is %q; want the gateway's error and what the model was told", d)
	}
	for _, bad := range []string{"Retrying", "tell the user"} {
		if strings.Contains(got["turn"].(string), bad) {
			t.Errorf("the turn shows %q:\n%s", bad, got["turn"])
		}
	}

	// 2. Its panel.
	b.do("its panel",
		chromedp.Click(css(`#tree .node[data-id="mcp_broken"] > .row .label`)),
		clickNode(`#list-tools`),
		chromedp.WaitVisible(css(`#tool-panel .plain[data-problem="config"]`)),
	)
	panel := eval[map[string]any](b, "the panel", `(() => ({
		lines: [...document.querySelectorAll("#tool-panel .plain .plain-line")].map((e) => e.textContent),
		text: document.querySelector("#tool-panel").innerText,
		modelDesc: document.querySelector("#tool-panel-info details.model-desc")?.open,
	}))()`)
	if lines, _ := panel["lines"].([]any); len(lines) != 1 || lines[0] != wantBroken {
		t.Errorf("the panel's plain lines are %v, want one: %q", panel["lines"], wantBroken)
	}
	if text := panel["text"].(string); strings.Contains(text, "provides access to") || strings.Contains(text, "executable file not found") || strings.Contains(text, "no such file") {
		t.Errorf("the panel shows text for the model or the raw error unfolded:\n%s", text)
	}
	if panel["modelDesc"] != false {
		t.Errorf("the model's description of the gateway: open %v, want folded", panel["modelDesc"])
	}
	t.Logf("screenshot: %s", docScreenshot(t, b, "ui-failed-server-plain.png"))
	b.do("close the panel", clickNode(`#tool-panel-close`), chromedp.WaitNotVisible(css(`#tool-panel`)))

	// 3. A sign-in is asked for, not called a failure.
	ask(b, "who am I on secure?")
	b.do("the run ends", waitJS(lastTurn+`.querySelector('[data-type="completed"]') !== null && document.body.dataset.state === "idle"`))
	signIn := eval[map[string]any](b, "the sign-in line", `(() => {
		const n = `+lastTurn+`.querySelector('[data-type="self_healing_error"]');
		return {
			problem: n?.dataset.problem, line: n?.querySelector(".plain-line")?.innerText,
			connect: !!n?.querySelector('.plain-line .connect-button[data-server="secure"]'),
			error: n?.classList.contains("error"), visible: n?.innerText,
			badge: document.querySelector('#tree .node[data-id="mcp_secure"] > .row .badge').textContent,
		};
	})()`)
	if signIn["problem"] != "sign-in" || !strings.HasPrefix(signIn["line"].(string), "Sign in to secure to use it.") || signIn["connect"] != true || signIn["error"] != false {
		t.Errorf("the chat shows the missing sign-in as %v", signIn)
	}
	for _, bad := range []string{"fail", "Retrying"} {
		if strings.Contains(strings.ToLower(signIn["visible"].(string)), strings.ToLower(bad)) || strings.Contains(signIn["badge"].(string), bad) {
			t.Errorf("a missing sign-in is called %q: %v", bad, signIn)
		}
	}
	for _, e := range b.consoleErrors() {
		if !strings.Contains(e, "502 (Bad Gateway)") { // the failed list's own answer
			t.Errorf("console error: %s", e)
		}
	}
}
