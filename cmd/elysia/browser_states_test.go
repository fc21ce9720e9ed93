package main

import (
	"encoding/json"
	"strings"
	"testing"

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
