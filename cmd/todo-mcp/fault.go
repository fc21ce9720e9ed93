package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// defaultFaultSize is the size of the fault tool's "big" answer: 10 MiB.
const defaultFaultSize = 10 << 20

// maxFaultSize bounds the "big" answer so a typo cannot exhaust memory.
const maxFaultSize = 1 << 30

// faultExitCode is the exit status of the fault tool's "crash" mode.
const faultExitCode = 3

// faultTool describes the fault tool, registered only with --fault-tools so
// that other packages' resilience tests can make a real server misbehave.
func faultTool() mcp.Tool {
	return mcp.NewTool("fault",
		mcp.WithDescription("For tests only: misbehave on purpose. mode crash exits the server process mid-call (status 3); hang blocks until the call is cancelled; big returns a text of size bytes (default 10 MiB)."),
		inputSchema(json.RawMessage(`{"type": "object", "properties": {
			"mode": {"type": "string", "enum": ["crash", "hang", "big"], "description": "How to misbehave."},
			"size": {"type": "integer", "minimum": 0, "maximum": 1073741824, "description": "Bytes of text for mode big (default 10485760)."}},
			"required": ["mode"], "additionalProperties": false}`)),
		annotations("Fault injection (tests)", false, true, false),
	)
}

// faultHandler implements the fault tool; exit ends the process (nil means
// os.Exit). A hang is logged when it starts, so that a test can tell the
// call reached the server.
func faultHandler(exit func(int), logger *slog.Logger) mcpserver.ToolHandlerFunc {
	if exit == nil {
		exit = os.Exit
	}
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		a, err := parseArgs(req)
		if err != nil {
			return argResult(err), nil
		}
		var mode *string
		var size *int64
		if err := firstErr(a.str("mode", true, &mode), a.integer("size", 0, maxFaultSize, &size)); err != nil {
			return argResult(err), nil
		}
		switch deref(mode) {
		case "crash":
			exit(faultExitCode)
			// Reached only when a test replaced exit.
			return mcp.NewToolResultError("crash: exit was called"), nil
		case "hang":
			logger.InfoContext(ctx, "fault: hanging until the call is cancelled")
			<-ctx.Done()
			return nil, fmt.Errorf("hang: %w", context.Cause(ctx))
		case "big":
			n := int64(defaultFaultSize)
			if size != nil {
				n = *size
			}
			return mcp.NewToolResultText(strings.Repeat("x", int(n))), nil
		default:
			return argResult(&argError{Field: "mode", Msg: fmt.Sprintf("must be crash, hang or big, not %q", deref(mode))}), nil
		}
	}
}

// maxFaultDelay bounds fault_read's delay_ms: a minute.
const maxFaultDelay = 60_000

// faultReadTool describes fault_read, registered with --fault-tools: a
// read-only, idempotent tool that answers after a delay, so that a test can
// lose the server while a call that may be sent twice is in flight.
func faultReadTool() mcp.Tool {
	return mcp.NewTool("fault_read",
		mcp.WithDescription("For tests only: a read that answers after delay_ms milliseconds with the server's process id; it changes nothing."),
		inputSchema(json.RawMessage(`{"type": "object", "properties": {
			"delay_ms": {"type": "integer", "minimum": 0, "maximum": 60000, "description": "How long to wait before answering."}},
			"additionalProperties": false}`)),
		annotations("Slow read (tests)", true, false, true),
	)
}

// faultReadHandler implements fault_read; a read with a delay is logged
// when it starts, so that a test can tell the call reached the server.
func faultReadHandler(logger *slog.Logger) mcpserver.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return faultRead(ctx, req, logger)
	}
}

func faultRead(ctx context.Context, req mcp.CallToolRequest, logger *slog.Logger) (*mcp.CallToolResult, error) {
	a, err := parseArgs(req)
	if err != nil {
		return argResult(err), nil
	}
	var delay *int64
	if err := a.integer("delay_ms", 0, maxFaultDelay, &delay); err != nil {
		return argResult(err), nil
	}
	if deref(delay) > 0 {
		logger.InfoContext(ctx, "fault_read: reading", "delay_ms", deref(delay))
	}
	t := time.NewTimer(time.Duration(deref(delay)) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return nil, fmt.Errorf("fault_read: %w", context.Cause(ctx))
	}
	return mcp.NewToolResultText(fmt.Sprintf("read by pid %d after %d ms", os.Getpid(), deref(delay))), nil
}
