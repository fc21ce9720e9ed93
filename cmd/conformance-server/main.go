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
package main

import (
	"context"
	"errors"
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
	if len(os.Args) > 1 {
		fmt.Fprintln(os.Stderr, "usage: conformance-server (serves MCP over stdio; no flags)")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	out := newSentWriter(os.Stdout)
	// mcp-go runs five tool calls at once by default; a call waiting for
	// its client's answer holds one, and a 2026-07-28 client need never
	// answer, so the suite's calls left waiting would queue the next ones.
	s := mcpserver.NewStdioServer(newServer(out))
	mcpserver.WithWorkerPoolSize(64)(s)
	s.SetErrorLogger(slog.NewLogLogger(logger.Handler(), slog.LevelWarn))
	err := s.Listen(ctx, os.Stdin, out)
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		logger.Error("conformance-server: stdio ended", "err", err)
		os.Exit(1)
	}
}
