package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/elysia-go/elysia/internal/testenv"
)

// TestBrowserStoppedTurnReopens stops server-everything's long operation
// from the chat, then opens the conversation again: the turn shows it was
// stopped, its call where it stopped, and nothing that looks alive. Before,
// the stop was not saved, and the reopened turn had a progress bar frozen
// at 3 / 30.
func TestBrowserStoppedTurnReopens(t *testing.T) {
	llm := newFakeLLM(t, call("mcp_everything", map[string]any{"action": "execute", "tool_name": "trigger-long-running-operation",
		"tool_inputs": map[string]any{"duration": 60, "steps": 30}}))
	s := everythingService(t, llm)
	b := newBrowser(t, 2*browserTimeout)
	openEverythingPage(b, s, "alice")
	ask(b, "run long")
	b.do("stop it mid-way",
		waitJS(`document.querySelector("#chat .tool-progress progress")?.value >= 3`),
		chromedp.Click(css(`#query-stop`)),
		waitJS(`document.body.dataset.state === "idle"`),
		chromedp.WaitVisible(css(`#chat [data-type="stopped"]`)),
	)
	if n := eval[int](b, "stop notes", `document.querySelectorAll("#chat [data-type='stopped']").length`); n != 1 {
		t.Errorf("the live turn has %d stop notes, want 1", n)
	}
	testenv.WaitFor(t, stepTimeout, "the stopped query to be saved", func() bool {
		_, body := do(t, "GET", s.URL+"/conversations/alice/c1", "", nil)
		raw, _ := json.Marshal(body)
		return strings.Contains(string(raw), `"type":"completed"`)
	})

	openEverythingPage(b, s, "alice")
	b.do("the reopened turn", chromedp.WaitVisible(css(`#chat [data-type="stopped"]`)))
	got := eval[map[string]any](b, "the reopened turn", `(() => {
		const bar = document.querySelector("#chat .tool-progress");
		return {
			stop: document.querySelector("#chat [data-type='stopped']").textContent.trim(),
			bars: document.querySelectorAll("#chat progress, #chat .turn .progress .spinner").length,
			state: bar?.dataset.state,
			at: bar?.querySelector(".tp-count")?.textContent,
			unfinished: document.querySelectorAll("#chat [data-type='unfinished']").length,
			done: document.querySelectorAll("#chat .done:not([hidden])").length,
		};
	})()`)
	if got["stop"] != "Stopped by the user." || got["bars"] != 0.0 || got["state"] != "stopped" || got["unfinished"] != 0.0 || got["done"] != 0.0 {
		t.Errorf("the reopened stopped turn: %v; want the stop said, no live bar, the call stopped", got)
	}
	if at, _ := got["at"].(string); !strings.HasPrefix(at, "stopped at ") || !strings.HasSuffix(at, " / 30") || at == "stopped at 30 / 30" {
		t.Errorf("the reopened call says %q; want where it stopped, short of 30", at)
	}
	t.Logf("screenshot: %s", screenshot(t, b, "ui-stopped-reopened.png"))
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}

// TestBrowserSignInNeededStates: a server alice must sign in to shows its
// name in full in the tree, with its badge and Connect button beside it or
// on a line of their own, and a chip that is not grey like an idle
// server's. Before, the badge and the button squeezed the name to one
// letter, and the chip's dot was the idle grey.
func TestBrowserSignInNeededStates(t *testing.T) {
	f := newOAuthFixture(t)
	s := startService(t, serveOptions{Env: newFakeLLM(t).Env(), Config: fmt.Sprintf(
		`{"servers": {"secure_notes": {"type": "http", "url": %q, "oauth": {}}}}`, f.rs.URL+"/mcp")})
	b := newBrowser(t, browserTimeout)
	row := `#tree .node[data-id="mcp_secure_notes"] > .row`
	b.do("open alice's page",
		chromedp.Navigate(s.URL+"/tree/alice/c1"),
		chromedp.WaitVisible(css(row+` .badge[data-state="needs_sign_in"]`)),
		chromedp.WaitVisible(css(row+` .connect-button`)),
		chromedp.WaitVisible(css(`#servers-status .server[data-server="secure_notes"]`)),
	)
	got := eval[map[string]any](b, "the row and the chip", `(() => {
		const name = document.querySelector(`+jsString(row+` .name`)+`);
		return {
			name: name.textContent, cut: name.scrollWidth > name.clientWidth, width: name.getBoundingClientRect().width,
			dot: getComputedStyle(document.querySelector('#servers-status .server[data-server="secure_notes"] .dot')).backgroundColor,
			badge: getComputedStyle(document.querySelector(`+jsString(row+` .badge`)+`)).color,
			label: document.querySelector(`+jsString(row+` .badge`)+`).textContent,
			connect: document.querySelector(`+jsString(row+` .connect-button`)+`).title,
			// What idle looks like: the muted grey.
			idle: getComputedStyle(document.documentElement).getPropertyValue("--muted").trim(),
		};
	})()`)
	if got["name"] != "secure_notes" || got["cut"] != false {
		t.Errorf("the tree shows the name %q (cut %v, %v px wide); want secure_notes in full", got["name"], got["cut"], got["width"])
	}
	idle := got["idle"].(string)
	if sameColour(got["dot"].(string), idle) || sameColour(got["badge"].(string), idle) {
		t.Errorf("needs sign-in looks like idle (%s): dot %v, badge %v", idle, got["dot"], got["badge"])
	}
	if got["label"] != "needs sign-in" {
		t.Errorf("the badge says %q, want needs sign-in", got["label"])
	}
	if got["connect"] != "Sign in to mcp_secure_notes as alice" {
		t.Errorf("the Connect button says %q; want whose sign-in it is, Sign in to mcp_secure_notes as alice", got["connect"])
	}
	t.Logf("screenshot: %s", screenshot(t, b, "ui-needs-sign-in.png"))
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}

// TestBrowserBrokenServerRedFromStartup: a server whose command does not
// exist is red in the tree and in its chip as soon as the page opens, when
// /api/servers reports it failed before any call. The report itself is
// the gateway's (mcpgateway); until it makes it, this test is skipped.
func TestBrowserBrokenServerRedFromStartup(t *testing.T) {
	s := startService(t, serveOptions{Env: newFakeLLM(t).Env(), Config: `{"servers": {"broken": {"command": "./no-such-server"}}}`})
	state := ""
	testenv.WaitFor(t, 10*time.Second, "/api/servers to report broken", func() bool {
		_, body := do(t, "GET", s.URL+"/api/servers", "", nil)
		if servers, _ := body["servers"].([]any); len(servers) == 1 {
			state, _ = servers[0].(map[string]any)["state"].(string)
		}
		return state != "" && state != "connecting"
	})
	if state != "failed" {
		t.Skipf("/api/servers reports a stdio server whose command does not exist as %q before its first call, not failed (mcpgateway)", state)
	}
	b := newBrowser(t, browserTimeout)
	b.do("open the page",
		chromedp.Navigate(s.URL+"/tree/alice/c1"),
		chromedp.WaitVisible(css(`#tree .node[data-id="mcp_broken"] > .row .badge[data-state="failed"]`)),
		chromedp.WaitVisible(css(`#servers-status .server.state-failed[data-server="broken"]`)),
	)
	got := eval[[]string](b, "colours", `[
		getComputedStyle(document.querySelector('#servers-status .server[data-server="broken"] .dot')).backgroundColor,
		getComputedStyle(document.documentElement).getPropertyValue("--err").trim(),
	]`)
	if !sameColour(got[0], got[1]) {
		t.Errorf("the broken server's dot is %s, want the error colour %s", got[0], got[1])
	}
	b.do("open its panel",
		chromedp.Click(css(`#tree .node[data-id="mcp_broken"] > .row .label`)),
		chromedp.WaitVisible(css(`#tool-panel-info .plain[data-problem="config"]`)),
	)
	if line := eval[string](b, "the panel's line", `document.querySelector("#tool-panel-info .plain .plain-line").textContent`); line != "broken can't start: ./no-such-server not found. Fix its command in mcp.json." {
		t.Errorf("the panel says %q", line)
	}
}

// sameColour reports whether rgb, a computed "rgb(r, g, b)", is hex
// ("#rrggbb").
func sameColour(rgb, hex string) bool {
	var r, g, b int
	if _, err := fmt.Sscanf(hex, "#%02x%02x%02x", &r, &g, &b); err != nil {
		return false
	}
	return strings.ReplaceAll(rgb, " ", "") == fmt.Sprintf("rgb(%d,%d,%d)", r, g, b)
}
