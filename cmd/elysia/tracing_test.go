package main

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"

	"github.com/elysia-go/elysia/internal/testenv"
)

// gotSpan is one span as an OTLP receiver decoded it.
type gotSpan struct {
	Service  string
	Name     string
	Kind     string
	TraceID  string
	SpanID   string
	Parent   string
	Attrs    map[string]any
	Links    []string // the span ids it links to
	StatusOK bool
}

func (s gotSpan) String() string {
	return fmt.Sprintf("%s/%q span %s parent %s trace %s", s.Service, s.Name, s.SpanID, s.Parent, s.TraceID)
}

// otlpReceiver is an OTLP/HTTP trace collector on 127.0.0.1: it decodes
// each POST /v1/traces (protobuf, maybe gzip) with the official protos.
type otlpReceiver struct {
	srv *httptest.Server

	mu    sync.Mutex
	spans []gotSpan
	posts int
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	o := &otlpReceiver{}
	o.srv = httptest.NewServer(http.HandlerFunc(o.serve))
	t.Cleanup(o.srv.Close)
	return o
}

func (o *otlpReceiver) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" {
		http.Error(w, "want POST /v1/traces", http.StatusNotFound)
		return
	}
	var body io.Reader = http.MaxBytesReader(w, r.Body, 16<<20)
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	raw, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req collectortrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(raw, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var got []gotSpan
	for _, rs := range req.GetResourceSpans() {
		service := fmt.Sprint(attrMap(rs.GetResource().GetAttributes())["service.name"])
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				var links []string
				for _, l := range sp.GetLinks() {
					links = append(links, hex.EncodeToString(l.GetSpanId()))
				}
				got = append(got, gotSpan{Service: service, Name: sp.GetName(), Kind: sp.GetKind().String(), Links: links,
					TraceID: hex.EncodeToString(sp.GetTraceId()), SpanID: hex.EncodeToString(sp.GetSpanId()),
					Parent: hex.EncodeToString(sp.GetParentSpanId()), Attrs: attrMap(sp.GetAttributes()),
					StatusOK: sp.GetStatus().GetCode().String() != "STATUS_CODE_ERROR"})
			}
		}
	}
	o.mu.Lock()
	o.posts++
	o.spans = append(o.spans, got...)
	o.mu.Unlock()
	out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func attrMap(kvs []*commonpb.KeyValue) map[string]any {
	m := map[string]any{}
	for _, kv := range kvs {
		v := kv.GetValue()
		switch v.GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.GetKey()] = v.GetStringValue()
		case *commonpb.AnyValue_IntValue:
			m[kv.GetKey()] = v.GetIntValue()
		case *commonpb.AnyValue_BoolValue:
			m[kv.GetKey()] = v.GetBoolValue()
		default:
			m[kv.GetKey()] = v.String()
		}
	}
	return m
}

func (o *otlpReceiver) Spans() []gotSpan {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]gotSpan(nil), o.spans...)
}

func (o *otlpReceiver) Posts() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.posts
}

// tracedServer is an MCP server over streamable HTTP whose tool lookup
// continues the caller's trace: it reads traceparent from the request's
// _meta (else its HTTP header) and records a span of its own, exported to
// collector when it is not "". It records the traceparents it was sent.
type tracedServer struct {
	URL string

	mu     sync.Mutex
	header []string // traceparent headers of tools/call requests
	meta   []string // params._meta.traceparent of tools/call requests
}

type headerKey struct{}

func newTracedServer(t *testing.T, collector string) *tracedServer {
	t.Helper()
	ts := &tracedServer{}
	tracer := trace.Tracer(noop.NewTracerProvider().Tracer("")) // no collector: no spans
	if collector != "" {
		exp, err := otlptracehttp.New(t.Context(), otlptracehttp.WithEndpointURL(collector+"/v1/traces"))
		if err != nil {
			t.Fatal(err)
		}
		res := resource.NewSchemaless(attribute.String("service.name", "test-mcp-server"))
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithResource(res))
		t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
		tracer = tp.Tracer("test-mcp-server")
	}
	srv := mcpserver.NewMCPServer("traced", "1.0.0")
	srv.AddTool(mcp.NewTool("lookup", mcp.WithString("q")), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		h, _ := ctx.Value(headerKey{}).(string)
		carrier := propagation.MapCarrier{}
		if req.Params.Meta != nil {
			for _, k := range []string{"traceparent", "tracestate"} {
				if v, ok := req.Params.Meta.AdditionalFields[k].(string); ok {
					carrier[k] = v
				}
			}
		}
		ts.mu.Lock()
		ts.header = append(ts.header, h)
		ts.meta = append(ts.meta, carrier["traceparent"])
		ts.mu.Unlock()
		if carrier["traceparent"] == "" && h != "" {
			carrier["traceparent"] = h
		}
		ctx = propagation.TraceContext{}.Extract(ctx, carrier)
		_, span := tracer.Start(ctx, "tools/call lookup", trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("mcp.method.name", "tools/call")))
		span.End()
		return mcp.NewToolResultText("found " + req.GetString("q", "")), nil
	})
	h := mcpserver.NewStreamableHTTPServer(srv, mcpserver.WithHTTPContextFunc(func(ctx context.Context, r *http.Request) context.Context {
		return context.WithValue(ctx, headerKey{}, r.Header.Get("traceparent"))
	}))
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	ts.URL = hs.URL + "/mcp"
	return ts
}

func (ts *tracedServer) seen() (header, meta []string) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]string(nil), ts.header...), append([]string(nil), ts.meta...)
}

// tracedScript calls lookup on the traced server, then answers.
func tracedScript() []reply {
	return []reply{
		call("mcp_search", map[string]any{"action": "execute", "tool_name": "lookup", "tool_inputs": map[string]any{"q": "otel"}}),
		answer("Found it."),
	}
}

// TestTraceOfOneQuery: with OTEL_EXPORTER_OTLP_ENDPOINT set, one query is
// one trace, received over OTLP/HTTP: the HTTP request, the query, its decisions and
// their model calls (GenAI attributes), the gateway action, its MCP call
// (MCP attributes) and the span of the server that continued the trace
// from the traceparent it was sent. Its log lines carry the trace id. Over
// a WebSocket, each query is a trace of its own, linked to the socket's.
func TestTraceOfOneQuery(t *testing.T) {
	t.Parallel()
	rcv := newOTLPReceiver(t)
	mcpSrv := newTracedServer(t, rcv.srv.URL)
	llm := newFakeLLM(t, append(tracedScript(), append(tracedScript(), tracedScript()...)...)...)
	s := startService(t, serveOptions{
		Config: fmt.Sprintf(`{"servers": {"search": {"type": "http", "url": %q}}}`, mcpSrv.URL),
		Env:    append(llm.Env(), "OTEL_EXPORTER_OTLP_ENDPOINT="+rcv.srv.URL, "OTEL_BSP_SCHEDULE_DELAY=50", "OTEL_SERVICE_NAME=elysia-test"),
		Args:   []string{"--log-level", "debug"}, // the access log is at debug
	})
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	res := querySSE(t, ctx, s.URL, "", "alice", "c1", "look up otel")
	if res.Status != http.StatusOK || len(res.Events) == 0 || res.Events[len(res.Events)-1].Type != "completed" {
		t.Fatalf("query: %d %v", res.Status, types(res.Events))
	}
	requestID := res.Header.Get("X-Request-ID")

	const httpName = "POST /query/:user_id/:conversation_id"
	var root gotSpan
	testenv.WaitFor(t, 20*time.Second, "the HTTP request's span", func() bool {
		for _, sp := range rcv.Spans() {
			if sp.Name == httpName && sp.Service == "elysia-test" {
				root = sp
				return true
			}
		}
		return false
	})
	if root.Kind != "SPAN_KIND_SERVER" || root.Attrs["elysia.request_id"] != requestID || root.Attrs["http.route"] != "/query/:user_id/:conversation_id" {
		t.Errorf("HTTP span: kind %s attrs %v, want the request id %q", root.Kind, root.Attrs, requestID)
	}
	var trace []gotSpan
	for _, sp := range rcv.Spans() {
		if sp.TraceID == root.TraceID {
			trace = append(trace, sp)
		}
	}
	byName := func(name string) []gotSpan {
		var out []gotSpan
		for _, sp := range trace {
			if sp.Name == name {
				out = append(out, sp)
			}
		}
		return out
	}
	one := func(name string) gotSpan {
		t.Helper()
		got := byName(name)
		if len(got) != 1 {
			t.Fatalf("%d spans %q in the trace, want 1: %v", len(got), name, trace)
		}
		return got[0]
	}

	query := one("query")
	if query.Parent != root.SpanID || query.Attrs["elysia.query_id"] != "q-c1" || query.Attrs["elysia.request_id"] != requestID {
		t.Errorf("query span %v %v: want the HTTP span's child with the query and request ids", query, query.Attrs)
	}
	decisions := byName("decision")
	if len(decisions) != 2 {
		t.Fatalf("%d decision spans, want 2: %v", len(decisions), trace)
	}
	isDecision := map[string]bool{}
	for _, d := range decisions {
		isDecision[d.SpanID] = true
		if d.Parent != query.SpanID {
			t.Errorf("decision %s: parent %s, want the query span %s", d.SpanID, d.Parent, query.SpanID)
		}
	}
	if decisions[0].Attrs["elysia.tree.decision"] == nil || decisions[0].Attrs["elysia.tree.node"] == nil {
		t.Errorf("decision span without node or option: %v", decisions[0].Attrs)
	}
	models := byName("chat scripted")
	if len(models) != 2 {
		t.Fatalf("%d model call spans, want 2: %v", len(models), trace)
	}
	for _, m := range models {
		if !isDecision[m.Parent] || m.Kind != "SPAN_KIND_CLIENT" {
			t.Errorf("model call %s: parent %s kind %s, want a decision's child client span", m.SpanID, m.Parent, m.Kind)
		}
		for k, want := range map[string]any{"gen_ai.operation.name": "chat", "gen_ai.request.model": "scripted",
			"gen_ai.provider.name": "openai", "gen_ai.usage.input_tokens": int64(1), "gen_ai.usage.output_tokens": int64(1)} {
			if m.Attrs[k] != want {
				t.Errorf("model call %s: %s = %v, want %v", m.SpanID, k, m.Attrs[k], want)
			}
		}
	}

	action := one("gateway execute")
	if action.Parent != query.SpanID || action.Attrs["elysia.gateway.server"] != "search" || action.Attrs["elysia.gateway.tool"] != "lookup" || !action.StatusOK {
		t.Errorf("gateway action: parent %s attrs %v ok %v", action.Parent, action.Attrs, action.StatusOK)
	}
	var mcpCall, server gotSpan
	for _, sp := range byName("tools/call lookup") {
		if sp.Service == "test-mcp-server" {
			server = sp
		} else {
			mcpCall = sp
		}
	}
	if mcpCall.Parent != action.SpanID || mcpCall.Kind != "SPAN_KIND_CLIENT" {
		t.Errorf("MCP call %v: want a client span under the gateway action %s", mcpCall, action.SpanID)
	}
	for k, want := range map[string]any{"mcp.method.name": "tools/call", "gen_ai.tool.name": "lookup",
		"gen_ai.operation.name": "execute_tool", "elysia.mcp.server": "search", "network.transport": "tcp"} {
		if mcpCall.Attrs[k] != want {
			t.Errorf("MCP call: %s = %v, want %v", k, mcpCall.Attrs[k], want)
		}
	}
	if id, _ := mcpCall.Attrs["mcp.session.id"].(string); id == "" {
		t.Errorf("MCP call: no mcp.session.id: %v", mcpCall.Attrs)
	}
	if server.Parent != mcpCall.SpanID || server.Kind != "SPAN_KIND_SERVER" {
		t.Errorf("server span %v: want the child of the MCP call %s", server, mcpCall.SpanID)
	}
	for _, list := range byName("tools/list") { // when the call had to list the tools first
		if list.Parent != action.SpanID || list.Attrs["mcp.method.name"] != "tools/list" {
			t.Errorf("tools/list %v %v: want a child of the gateway action", list, list.Attrs)
		}
	}

	// The server was sent the MCP call's context both ways.
	wantTP := "00-" + root.TraceID + "-" + mcpCall.SpanID + "-01"
	header, meta := mcpSrv.seen()
	if len(header) != 1 || header[0] != wantTP || len(meta) != 1 || meta[0] != wantTP {
		t.Errorf("traceparent sent: header %q, _meta %q; want %q", header, meta, wantTP)
	}

	// The access log line joins the request id and the trace id.
	joined := false
	sc := bufio.NewScanner(strings.NewReader(s.Output()))
	for sc.Scan() {
		var line map[string]any
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			continue
		}
		if line["msg"] == "http request" && line["request_id"] == requestID {
			joined = line["trace_id"] == root.TraceID && line["span_id"] == root.SpanID
			break
		}
	}
	if !joined {
		t.Errorf("no access log line with request_id %s and trace_id %s:\n%s", requestID, root.TraceID, s.Output())
	}

	// Two queries over one WebSocket: two traces, each linked to the socket.
	conn := dialWS(t, s.URL, "")
	for _, q := range []string{"w1", "w2"} {
		sendWS(t, conn, map[string]string{"user_id": "alice", "conversation_id": q, "query_id": "q-" + q, "query": "look up otel"})
		if evs := readWS(t, conn, "q-"+q, 60*time.Second); evs[len(evs)-1].Type != "completed" {
			t.Fatalf("websocket query %s: %v", q, types(evs))
		}
	}
	_ = conn.Close(websocket.StatusNormalClosure, "")
	var socket gotSpan
	testenv.WaitFor(t, 20*time.Second, "the WebSocket's span", func() bool {
		for _, sp := range rcv.Spans() {
			if sp.Name == "GET /ws/query" {
				socket = sp
				return true
			}
		}
		return false
	})
	traces := map[string]bool{}
	for _, sp := range rcv.Spans() {
		if sp.Name != "query" || sp.TraceID == root.TraceID {
			continue
		}
		traces[sp.TraceID] = true
		if sp.Parent != "" || len(sp.Links) != 1 || sp.Links[0] != socket.SpanID || sp.TraceID == socket.TraceID {
			t.Errorf("websocket query span %v links %v: want the root of its own trace, linked to the socket's span %s", sp, sp.Links, socket.SpanID)
		}
		decided := false
		for _, d := range rcv.Spans() {
			decided = decided || d.Name == "decision" && d.Parent == sp.SpanID
		}
		if !decided {
			t.Errorf("websocket query span %v has no decision under it", sp)
		}
	}
	if len(traces) != 2 {
		t.Errorf("%d traces for the two websocket queries, want 2", len(traces))
	}
}

// TestNoTracesWithoutOTEL: with no OTLP endpoint set, or the SDK disabled,
// the service exports nothing and sends no traceparent to servers.
func TestNoTracesWithoutOTEL(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		env  func(collector string) []string
	}{
		{"unset", func(string) []string {
			return []string{"OTEL_EXPORTER_OTLP_ENDPOINT=", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="}
		}},
		{"disabled", func(c string) []string {
			return []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + c, "OTEL_BSP_SCHEDULE_DELAY=50", "OTEL_SDK_DISABLED=true"}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rcv := newOTLPReceiver(t)
			mcpSrv := newTracedServer(t, "")
			llm := newFakeLLM(t, tracedScript()...)
			s := startService(t, serveOptions{
				Config: fmt.Sprintf(`{"servers": {"search": {"type": "http", "url": %q}}}`, mcpSrv.URL),
				Env:    append(llm.Env(), tt.env(rcv.srv.URL)...),
			})
			ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
			defer cancel()
			res := querySSE(t, ctx, s.URL, "", "alice", "c1", "look up otel")
			if res.Status != http.StatusOK || len(res.Events) == 0 || res.Events[len(res.Events)-1].Type != "completed" {
				t.Fatalf("query: %d %v", res.Status, types(res.Events))
			}
			s.Stop(t) // flushes whatever a tracer provider would hold
			header, meta := mcpSrv.seen()
			if len(header) != 1 || header[0] != "" || meta[0] != "" {
				t.Errorf("traceparent sent without tracing: header %q, _meta %q", header, meta)
			}
			if n := rcv.Posts(); n != 0 {
				t.Errorf("%d OTLP exports without tracing: %v", n, rcv.Spans())
			}
			if strings.Contains(s.Output(), `"trace_id"`) {
				t.Errorf("log lines carry a trace_id without tracing:\n%s", s.Output())
			}
		})
	}
}
