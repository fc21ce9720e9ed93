package session

import (
	"context"
	"errors"
	"net/http"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/elysia-go/elysia/internal/tracing"
	"github.com/elysia-go/elysia/mcpgateway/mcpauth"
	"github.com/elysia-go/elysia/tools"
)

// tracerName is the instrumentation scope of the gateway's spans.
const tracerName = "github.com/elysia-go/elysia/mcpgateway"

func tracer() trace.Tracer { return otel.Tracer(tracerName) }

// startMCP starts the client span of one MCP request on s: method, the
// tool it names ("" for none), the session and the server, as the MCP
// conventions name them. The attributes are built only for a span that
// records: without a tracer provider every tool call would build them for
// a span nobody reads. They are set after the start, so a sampler does not
// see them (the service's samples by its parent or always).
func startMCP(ctx context.Context, server string, s *Session, method, tool string) (context.Context, trace.Span) {
	if !tracing.On() {
		return ctx, tracing.Skipped
	}
	name := method
	if tool != "" {
		name += " " + tool
	}
	ctx, span := tracer().Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient))
	if !span.IsRecording() {
		return ctx, span
	}
	attrs := []attribute.KeyValue{
		attribute.String("mcp.method.name", method),
		attribute.String("elysia.mcp.server", server),
	}
	if tool != "" {
		attrs = append(attrs, attribute.String("gen_ai.tool.name", tool),
			attribute.String("gen_ai.operation.name", "execute_tool"))
	}
	if s != nil {
		if s.protocol != "" {
			attrs = append(attrs, attribute.String("mcp.protocol.version", s.protocol))
		}
		transport := "tcp"
		if s.transport == "stdio" {
			transport = "pipe"
		}
		attrs = append(attrs, attribute.String("network.transport", transport))
		if s.client != nil {
			if id := s.client.GetSessionId(); id != "" {
				attrs = append(attrs, attribute.String("mcp.session.id", id))
			}
		}
	}
	span.SetAttributes(attrs...)
	return ctx, span
}

// endMCP ends an MCP request's span: err is a failed request, isError a
// tool's error result (error.type tool_error, as the conventions say).
func endMCP(span trace.Span, err error, isError bool) {
	switch {
	case err != nil:
		span.SetAttributes(attribute.String("error.type", ErrorType(err)))
		span.SetStatus(codes.Error, "request failed")
	case isError:
		span.SetAttributes(attribute.String("error.type", "tool_error"))
		span.SetStatus(codes.Error, "error result")
	}
	span.End()
}

// traceMeta returns the _meta fields carrying ctx's trace context
// (traceparent, tracestate), or nil when there is none to send.
func traceMeta(ctx context.Context) map[string]any {
	carrier := propagation.MapCarrier{}
	otel.GetTextMapPropagator().Inject(ctx, carrier)
	if len(carrier) == 0 {
		return nil
	}
	out := make(map[string]any, len(carrier))
	for k, v := range carrier {
		out[k] = v
	}
	return out
}

// traceRoundTripper sends the request ctx's trace context on as W3C
// traceparent and tracestate headers.
type traceRoundTripper struct{ base http.RoundTripper }

func (t traceRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	carrier := propagation.HeaderCarrier{}
	otel.GetTextMapPropagator().Inject(r.Context(), carrier)
	if len(carrier) > 0 {
		r = r.Clone(r.Context()) // a RoundTripper must not change its request
		for k, v := range carrier {
			r.Header[k] = v
		}
	}
	return t.base.RoundTrip(r)
}

// CloseIdleConnections passes on to the base transport.
func (t traceRoundTripper) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// ErrorType is a low-cardinality error.type for err: never its text, which
// may quote a server.
func ErrorType(err error) string {
	var ae *tools.ArgumentError
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.As(err, &ae):
		return "invalid_arguments"
	case errors.Is(err, tools.ErrUnknownTool):
		return "unknown_tool"
	case errors.Is(err, mcpauth.ErrSignInRequired):
		return "sign_in_required"
	case IsServerAnswer(err):
		return "jsonrpc_error"
	}
	return "_OTHER"
}
