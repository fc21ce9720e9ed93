//go:build unix

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elysia-go/elysia/internal/testenv"
)

// goSDKCallTimeout bounds one tool call of the official Go SDK's client,
// with every question its server asks on the way.
const goSDKCallTimeout = 30 * time.Second

// goSDKRecorder is the official Go SDK client's model and user: it
// answers every sampling and elicitation request with text that carries
// marker, and records what it was asked.
type goSDKRecorder struct {
	marker string

	mu      sync.Mutex
	prompts []string // the text of every sampling request's messages
	forms   []string // the message of every elicitation request
}

// createMessage is the client's CreateMessageHandler: its model's answer
// names the marker.
//
//lint:ignore SA1019 sampling is deprecated in 2026-07-28 but still supported, and tested here
func (r *goSDKRecorder) createMessage(_ context.Context, req *gosdk.CreateMessageRequest) (*gosdk.CreateMessageResult, error) { //nolint:staticcheck // deprecated sampling, tested on purpose
	var text []string
	for _, m := range req.Params.Messages {
		if tc, ok := m.Content.(*gosdk.TextContent); ok {
			text = append(text, tc.Text)
		}
	}
	r.mu.Lock()
	r.prompts = append(r.prompts, strings.Join(text, "\n"))
	r.mu.Unlock()
	//lint:ignore SA1019 see above
	return &gosdk.CreateMessageResult{ //nolint:staticcheck // see above
		Role:       "assistant",
		Content:    &gosdk.TextContent{Text: r.sampled()},
		Model:      "gosdk-test-model",
		StopReason: "endTurn",
	}, nil
}

// sampled is the text the client's model answers.
func (r *goSDKRecorder) sampled() string { return "Paris, says the go-sdk model of " + r.marker }

// elicit is the client's ElicitationHandler: it accepts, giving every
// property of the requested schema the value answer(property).
func (r *goSDKRecorder) elicit(_ context.Context, req *gosdk.ElicitRequest) (*gosdk.ElicitResult, error) {
	r.mu.Lock()
	r.forms = append(r.forms, req.Params.Message)
	r.mu.Unlock()
	content := map[string]any{}
	schema, _ := req.Params.RequestedSchema.(map[string]any)
	props, _ := schema["properties"].(map[string]any)
	for p := range props {
		content[p] = r.answer(p)
	}
	return &gosdk.ElicitResult{Action: "accept", Content: content}, nil
}

// answer is the user's answer for a form's property.
func (r *goSDKRecorder) answer(property string) string { return property + "-of-" + r.marker }

// asked returns what the client was asked so far.
func (r *goSDKRecorder) asked() (prompts, forms []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.prompts...), append([]string(nil), r.forms...)
}

// goSDKConnect connects the official Go SDK's client with rec's handlers
// over transport, asking for protocol version, and closes it when the test
// ends.
func goSDKConnect(t *testing.T, transport gosdk.Transport, version string, rec *goSDKRecorder) *gosdk.ClientSession {
	t.Helper()
	c := gosdk.NewClient(&gosdk.Implementation{Name: "elysia-gosdk-test", Version: "1"}, &gosdk.ClientOptions{
		//lint:ignore SA1019 sampling is what the test is about
		CreateMessageHandler: rec.createMessage, //nolint:staticcheck // sampling is what the test is about
		ElicitationHandler:   rec.elicit,
	})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, transport, &gosdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("go-sdk connect at %s: %v", version, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		t.Fatalf("go-sdk client asked for %s, negotiated %s", version, got)
	}
	return cs
}

// goSDKCall calls tool with args, within goSDKCallTimeout, and returns the
// text of its result; a protocol error or an isError result fails t.
func goSDKCall(t *testing.T, cs *gosdk.ClientSession, tool string, args map[string]any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), goSDKCallTimeout)
	defer cancel()
	res, err := cs.CallTool(ctx, &gosdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	text := goSDKText(res)
	if res.IsError {
		t.Fatalf("%s answered isError: %s", tool, text)
	}
	return text
}

// goSDKText is the text of a tool result's content.
func goSDKText(res *gosdk.CallToolResult) string {
	var out []string
	for _, c := range res.Content {
		if tc, ok := c.(*gosdk.TextContent); ok {
			out = append(out, tc.Text)
		}
	}
	return strings.Join(out, "\n")
}

// TestMCPEndpointGoSDK runs the official Go MCP SDK's client
// (github.com/modelcontextprotocol/go-sdk) against the aggregate endpoint,
// over HTTP (/mcp of elysia serve) and over stdio (elysia mcp serve), at
// each protocol version it can negotiate (2026-07-28, its default, and
// 2025-11-25, asked for with ClientSessionOptions.ProtocolVersion), with
// the conformance fixture's two halves behind the endpoint: one pinned at
// 2025-11-25, whose tools ask with server-initiated requests, one at
// 2026-07-28, whose tools ask with input_required results. For each
// transport and version it shows that
//   - sampling: a tool of either half that asks the client's model gets
//     the text of the go-sdk client's CreateMessageHandler in its result;
//   - elicitation: a tool of either half that asks the user gets the
//     go-sdk client's ElicitationHandler's answer in its result;
//   - cancellation: a slow call cancelled by the client's context returns
//     within a bounded wait, the endpoint logs the upstream's call as
//     cancelled, and the same session then serves the next call.
func TestMCPEndpointGoSDK(t *testing.T) {
	fixture := testenv.ConformanceServer(t)
	cfg := conformanceConfig(fixture)
	s := startService(t, serveOptions{Config: cfg})
	bin := elysiaBin(t)
	stdioDir := t.TempDir()
	stdioConfig := filepath.Join(stdioDir, "mcp.json")
	if err := os.WriteFile(stdioConfig, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}

	// Each transport gives the client's connection and the endpoint's log
	// (JSON lines at info), where every tool call is reported as it ends.
	transports := []struct {
		name string
		open func(t *testing.T) (gosdk.Transport, func() string)
	}{
		{"http", func(*testing.T) (gosdk.Transport, func() string) {
			return &gosdk.StreamableClientTransport{Endpoint: s.URL + "/mcp"}, s.Output
		}},
		{"stdio", func(t *testing.T) (gosdk.Transport, func() string) {
			t.Helper()
			cmd := exec.Command(bin, "mcp", "serve", "--config", stdioConfig, "--db", "-", "--log-level", "info", "--log-format", "json")
			cmd.Dir = stdioDir
			cmd.Env = append(cleanEnv(), "ELYSIA_USER=gosdk")
			stderr := &testenv.SyncBuffer{}
			cmd.Stderr = stderr
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("elysia mcp serve stderr:\n%s", stderr.String())
				}
			})
			return &gosdk.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, stderr.String
		}},
	}
	versions := []string{"2026-07-28", "2025-11-25"}

	for _, tr := range transports {
		for _, version := range versions {
			t.Run(tr.name+"/"+version, func(t *testing.T) {
				rec := &goSDKRecorder{marker: tr.name + "-" + version}
				transport, log := tr.open(t)
				cs := goSDKConnect(t, transport, version, rec)
				tools := goSDKTools(t, cs)
				for _, want := range []string{"test_sampling", "test_elicitation", "test_input_required_result_sampling",
					"test_input_required_result_elicitation", "slow_compute"} {
					if _, found := slices.BinarySearch(tools, want); !found {
						t.Fatalf("tools/list lacks %s: %v", want, tools)
					}
				}
				goSDKSampling(t, cs, rec)
				goSDKElicitation(t, cs, rec)
				goSDKCancellation(t, cs, log)
			})
		}
	}
}

// goSDKSampling: each half's sampling tool answers with the text of rec's
// model, which was asked the tool's prompt.
func goSDKSampling(t *testing.T, cs *gosdk.ClientSession, rec *goSDKRecorder) {
	t.Helper()
	cases := []struct {
		name, tool string
		args       map[string]any
		prompt     string // what the tool asks the model
		want       string // the result: the tool's words and the model's
	}{
		{"sampling/2025-11-25 upstream", "test_sampling", map[string]any{"prompt": "Name a capital, " + rec.marker},
			"Name a capital, " + rec.marker, "LLM response: " + rec.sampled()},
		{"sampling/2026-07-28 upstream", "test_input_required_result_sampling", nil,
			"What is the capital of France?", "The model said: " + rec.sampled()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before, _ := rec.asked()
			text := goSDKCall(t, cs, c.tool, c.args)
			if text != c.want {
				t.Errorf("%s = %q, want %q (the go-sdk client's model's text)", c.tool, text, c.want)
			}
			prompts, _ := rec.asked()
			if got := prompts[len(before):]; len(got) != 1 || !strings.Contains(got[0], c.prompt) {
				t.Errorf("the go-sdk client's model was asked %q, want once %q", got, c.prompt)
			}
		})
	}
}

// goSDKElicitation: each half's elicitation tool answers with what rec's
// user filled in, having been asked the tool's question.
func goSDKElicitation(t *testing.T, cs *gosdk.ClientSession, rec *goSDKRecorder) {
	t.Helper()
	cases := []struct {
		name, tool string
		args       map[string]any
		question   string // what the tool asks the user
		want       string // the result: the tool's words and the user's
	}{
		{"elicitation/2025-11-25 upstream", "test_elicitation", map[string]any{"message": "Who are you, " + rec.marker + "?"},
			"Who are you, " + rec.marker + "?",
			fmt.Sprintf(`Elicitation completed: action=accept, content={"email":%q,"username":%q}`, rec.answer("email"), rec.answer("username"))},
		{"elicitation/2026-07-28 upstream", "test_input_required_result_elicitation", nil,
			"What is your name?", "Hello, " + rec.answer("name") + "!"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, before := rec.asked()
			text := goSDKCall(t, cs, c.tool, c.args)
			if text != c.want {
				t.Errorf("%s = %q, want %q (the go-sdk client's user's answer)", c.tool, text, c.want)
			}
			_, forms := rec.asked()
			if got := forms[len(before):]; len(got) != 1 || !strings.Contains(got[0], c.question) {
				t.Errorf("the go-sdk client's user was asked %q, want once %q", got, c.question)
			}
		})
	}
}

// goSDKCancellation: a slow_compute of a minute whose context the client
// cancels after a second returns within a few seconds of that, the
// endpoint (whose log is log) ends the upstream's call as cancelled rather
// than letting it run on, and the same session then serves slow_compute
// again.
func goSDKCancellation(t *testing.T, cs *gosdk.ClientSession, log func() string) {
	t.Helper()
	t.Run("cancellation", func(t *testing.T) {
		const cancelAfter, grace = time.Second, 5 * time.Second
		cancelled := func() int { return goSDKCancelledCalls(log(), "slow_compute") }
		before := cancelled()
		ctx, cancel := context.WithTimeout(t.Context(), cancelAfter)
		defer cancel()
		start := time.Now()
		done := make(chan error, 1)
		go func() {
			res, err := cs.CallTool(ctx, &gosdk.CallToolParams{Name: "slow_compute", Arguments: map[string]any{"seconds": 60, "label": "cancelled"}})
			if err == nil {
				err = fmt.Errorf("answered %q instead of being cancelled", goSDKText(res))
			}
			done <- err
		}()
		select {
		case err := <-done:
			if ctx.Err() == nil {
				t.Fatalf("slow_compute ended before its context was cancelled: %v", err)
			}
			if d := time.Since(start); d > cancelAfter+grace {
				t.Errorf("the cancelled call returned after %v, want within %v of the cancel", d, grace)
			}
		case <-time.After(cancelAfter + grace):
			t.Fatalf("the cancelled call had not returned %v after the cancel", grace)
		}
		testenv.WaitFor(t, grace, "the endpoint to log slow_compute's upstream call as cancelled", func() bool { return cancelled() > before })

		ctx, cancel = context.WithTimeout(t.Context(), goSDKCallTimeout)
		defer cancel()
		res, err := cs.CallTool(ctx, &gosdk.CallToolParams{Name: "slow_compute", Arguments: map[string]any{"seconds": 0.1, "label": "after the cancel"}})
		if err != nil {
			t.Fatalf("slow_compute on the same session after the cancelled call: %v", err)
		}
		if text, want := goSDKText(res), "Computed after the cancel in 0.1s"; res.IsError || text != want {
			t.Errorf("slow_compute after the cancelled call = %q (isError %v), want %q", text, res.IsError, want)
		}
	})
}

// goSDKCancelledCalls counts the lines of an endpoint's JSON log that
// report a call of tool ended by its cancellation.
func goSDKCancelledCalls(log, tool string) int {
	n := 0
	for line := range strings.Lines(log) {
		if strings.Contains(line, `"msg":"tool call"`) && strings.Contains(line, `"tool":"`+tool+`"`) &&
			strings.Contains(line, `"status":"failure"`) && strings.Contains(line, "context canceled") {
			n++
		}
	}
	return n
}

// goSDKTools lists the tools the session sees, sorted.
func goSDKTools(t *testing.T, cs *gosdk.ClientSession) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), goSDKCallTimeout)
	defer cancel()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}
