// Command conformance-server is the fixture MCP server the official MCP
// conformance suite's server scenarios are run against through the
// aggregate endpoint (/mcp of `elysia serve`, cmd/elysia's
// TestConformanceServerScenarios; docs/CONFORMANCE.md). In the style of the
// SDKs' "everything" conformance servers, it has what those scenarios ask
// for by name:
//
//   - tools: test_simple_text, test_image_content, test_audio_content,
//     test_embedded_resource, test_multiple_content_types,
//     test_tool_with_logging, test_tool_with_progress, test_error_handling,
//     test_sampling, test_elicitation, test_elicitation_sep1034_defaults,
//     test_elicitation_sep1330_enums, test_reconnection and
//     json_schema_2020_12_tool;
//   - for the 2026-07-28 scenarios of suite 0.2 (mrtr.go): the
//     test_input_required_result_* tools and prompt, which ask with
//     input_required results (mcp-go asks a 2025-11-25 client the old
//     way), test_missing_capability and test_custom_headers (x-mcp-header
//     parameters);
//   - for the Tasks extension's scenarios (tasks.go): greet, slow_compute,
//     failing_job, protocol_error_job, confirm_delete, multi_input and
//     test_tool_with_task, listed with their execution.taskSupport;
//   - resources test://static-text, test://static-binary and
//     test://watched-resource (subscribable), the template
//     test://template/{id}/data;
//   - prompts test_simple_prompt, test_prompt_with_arguments (its arg1
//     completes), test_prompt_with_embedded_resource and
//     test_prompt_with_image;
//   - logging (logging/setLevel) and completion/complete.
//
// It serves stdio only (the gateway starts it) and keeps no state but the
// subscriptions of its one session. Logs go to stderr.
//
// Usage:
//
//	conformance-server [--only modern|legacy]
//
// With no flag it serves everything above. --only modern serves only what
// the 2026-07-28 scenarios and the Tasks extension's call (the tools of
// mrtr.go and tasks.go, and test_input_required_result_prompt), which ask
// with input_required results; --only legacy serves the rest, whose tools
// ask with server-initiated requests (test_sampling, test_elicitation*)
// that mcp-go refuses on a 2026-07-28 connection. The halves share no
// name, so a gateway can run one of each, the modern one pinned at
// 2026-07-28 and the legacy one at 2025-11-25, both unprefixed
// (cmd/elysia's conformanceConfig).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	mcpserver "github.com/mark3labs/mcp-go/server"
)

// version is the server version reported to clients.
const version = "0.1.0"

func main() {
	fs := flag.NewFlagSet("conformance-server", flag.ContinueOnError)
	fs.Usage = func() {
		_, _ = fmt.Fprintln(fs.Output(), "usage: conformance-server [--only modern|legacy] (serves MCP over stdio)") // nowhere left to report a failed write
	}
	only := fs.String("only", "", "serve only the modern (2026-07-28) or the legacy (2025-11-25) half")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	h, err := parseHalf(*only)
	if err == nil && fs.NArg() > 0 {
		err = fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance-server:", err)
		fs.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	out := newSentWriter(os.Stdout)
	// mcp-go runs five tool calls at once by default; a call waiting for
	// its client's answer holds one, and a 2026-07-28 client need never
	// answer, so the suite's calls left waiting would queue the next ones.
	s := mcpserver.NewStdioServer(newServer(out, h))
	mcpserver.WithWorkerPoolSize(64)(s)
	s.SetErrorLogger(slog.NewLogLogger(logger.Handler(), slog.LevelWarn))
	err = s.Listen(ctx, os.Stdin, out)
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		logger.Error("conformance-server: stdio ended", "err", err)
		os.Exit(1)
	}
}
