package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLICommandsExportTraces: with OTEL_EXPORTER_OTLP_ENDPOINT set,
// `elysia query` and `elysia mcp call` export their traces as `elysia
// serve` does, before they exit: a query is one trace rooted at its query
// span (decisions, model calls, the gateway action, the MCP call and the
// span of the server that continued it); a call is one trace rooted at its
// "mcp call" span. Without the variables they export nothing.
func TestCLICommandsExportTraces(t *testing.T) {
	t.Parallel()
	rcv := newOTLPReceiver(t)
	mcpSrv := newTracedServer(t, rcv.srv.URL)
	llm := newFakeLLM(t, tracedScript()...)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "mcp.json"), fmt.Sprintf(`{"servers": {"search": {"type": "http", "url": %q}}}`, mcpSrv.URL))
	env := append(llm.Env(), "OTEL_EXPORTER_OTLP_ENDPOINT="+rcv.srv.URL, "OTEL_SERVICE_NAME=elysia-cli")

	if code, out, errOut := runCLI(t, dir, env, "query", "look up otel"); code != 0 || !strings.Contains(out, "Found it.") {
		t.Fatalf("query: exit %d\n%s%s", code, out, errOut)
	}
	// The command has exited: its spans were sent before it did.
	query := cliRoot(t, rcv.Spans(), "query")
	spans := inTrace(rcv.Spans(), query.TraceID)
	decisions := childrenNamed(spans, query.SpanID, "decision")
	if len(decisions) != 2 {
		t.Fatalf("%d decision spans under the query, want 2: %v", len(decisions), spans)
	}
	models := 0
	for _, d := range decisions {
		models += len(childrenNamed(spans, d.SpanID, "chat scripted"))
	}
	if models != 2 {
		t.Errorf("%d model call spans under the decisions, want 2: %v", models, spans)
	}
	actions := childrenNamed(spans, query.SpanID, "gateway execute")
	if len(actions) != 1 {
		t.Fatalf("%d gateway execute spans under the query, want 1: %v", len(actions), spans)
	}
	cliCheckCall(t, spans, query.TraceID, actions[0].SpanID, mcpSrv, 1)

	if code, out, errOut := runCLI(t, dir, env, "mcp", "call", "search", "lookup", `{"q": "cli"}`); code != 0 || !strings.Contains(out, "found cli") {
		t.Fatalf("mcp call: exit %d\n%s%s", code, out, errOut)
	}
	call := cliRoot(t, rcv.Spans(), "mcp call")
	if call.TraceID == query.TraceID || call.Attrs["elysia.mcp.server"] != "search" || call.Attrs["gen_ai.tool.name"] != "lookup" {
		t.Errorf("mcp call span %v %v: want a trace of its own, naming the server and the tool", call, call.Attrs)
	}
	cliCheckCall(t, inTrace(rcv.Spans(), call.TraceID), call.TraceID, call.SpanID, mcpSrv, 2)

	before := len(rcv.Spans())
	if code, out, errOut := runCLI(t, dir, append(llm.Env(), "OTEL_EXPORTER_OTLP_ENDPOINT="), "mcp", "call", "search", "lookup", `{"q": "quiet"}`); code != 0 {
		t.Fatalf("mcp call without OTEL: exit %d\n%s%s", code, out, errOut)
	}
	for _, sp := range rcv.Spans()[before:] {
		if sp.Service != "test-mcp-server" {
			t.Errorf("a call without OTEL_EXPORTER_OTLP_ENDPOINT exported %v", sp)
		}
	}
}

// cliRoot returns the one span named name of service elysia-cli, which
// must be the root of its trace.
func cliRoot(t *testing.T, spans []gotSpan, name string) gotSpan {
	t.Helper()
	var found []gotSpan
	for _, sp := range spans {
		if sp.Name == name && sp.Service == "elysia-cli" {
			found = append(found, sp)
		}
	}
	if len(found) != 1 || found[0].Parent != "" {
		t.Fatalf("%d %q spans from the command (%v), want one root span; all spans: %v", len(found), name, found, spans)
	}
	return found[0]
}

// cliCheckCall checks that the span parent of trace has one MCP call span
// under it, with the server's span under that, and that the server was
// sent the MCP call's context; calls is how many calls the server has seen.
func cliCheckCall(t *testing.T, spans []gotSpan, trace, parent string, srv *tracedServer, calls int) {
	t.Helper()
	mcpCalls := childrenNamed(spans, parent, "tools/call lookup")
	if len(mcpCalls) != 1 || mcpCalls[0].Kind != "SPAN_KIND_CLIENT" {
		t.Fatalf("MCP call spans under the gateway action: %v, want one client span", mcpCalls)
	}
	server := childrenNamed(spans, mcpCalls[0].SpanID, "tools/call lookup")
	if len(server) != 1 || server[0].Service != "test-mcp-server" {
		t.Errorf("server spans under the MCP call: %v, want the test server's", server)
	}
	header, meta := srv.seen()
	want := "00-" + trace + "-" + mcpCalls[0].SpanID + "-01"
	if len(header) != calls || header[calls-1] != want || meta[calls-1] != want {
		t.Errorf("traceparent sent: header %q, _meta %q; want %q last", header, meta, want)
	}
}

// inTrace returns the spans of one trace.
func inTrace(spans []gotSpan, traceID string) []gotSpan {
	var out []gotSpan
	for _, sp := range spans {
		if sp.TraceID == traceID {
			out = append(out, sp)
		}
	}
	return out
}

// childrenNamed returns the spans named name whose parent is parent.
func childrenNamed(spans []gotSpan, parent, name string) []gotSpan {
	var out []gotSpan
	for _, sp := range spans {
		if sp.Parent == parent && sp.Name == name {
			out = append(out, sp)
		}
	}
	return out
}
