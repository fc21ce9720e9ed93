package mcpgateway

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/elysia-go/elysia/internal/tracing"
	"github.com/elysia-go/elysia/mcpgateway/internal/session"
	"github.com/elysia-go/elysia/tools"
)

// Traces: a span per gateway action and one per MCP request, named and
// tagged as the OpenTelemetry MCP semantic conventions say
// (https://opentelemetry.io/docs/specs/semconv/gen-ai/mcp/). With no
// tracer provider set (cmd sets one only when OTEL_* asks for it) they are
// not started (tracing.On) and nothing is sent to servers.

// tracer is the gateway's tracer: the sessions' MCP request spans share
// its instrumentation scope.
func tracer() trace.Tracer { return otel.Tracer("github.com/elysia-go/elysia/mcpgateway") }

// startAction starts the span of one gateway action (list, execute, ...)
// on server; tool is the MCP tool an execute names, "" otherwise.
func startAction(ctx context.Context, server, action, tool string) (context.Context, trace.Span) {
	if !tracing.On() {
		return ctx, tracing.Skipped
	}
	attrs := []attribute.KeyValue{
		attribute.String("elysia.gateway.server", server),
		attribute.String("elysia.gateway.action", action),
	}
	if tool != "" {
		attrs = append(attrs, attribute.String("elysia.gateway.tool", tool))
	}
	return tracer().Start(ctx, "gateway "+action, trace.WithAttributes(attrs...))
}

// endAction ends an action's span with its outcome: an error Result is a
// failure the model sees (error.type tool_error), err one the caller sees.
func endAction(span trace.Span, res tools.Result, err error) {
	switch {
	case err != nil:
		span.SetAttributes(attribute.String("error.type", errorType(err)))
		span.SetStatus(codes.Error, "action failed")
	case res.IsError:
		span.SetAttributes(attribute.String("error.type", "tool_error"))
		span.SetStatus(codes.Error, "error result")
	}
	span.End()
}

// errorType is ErrorType with the gateway's own errors (an open circuit,
// a missing user secret) told apart.
func errorType(err error) string {
	if t := session.ErrorType(err); t != "_OTHER" {
		return t
	}
	switch {
	case errors.Is(err, ErrCircuitOpen):
		return "circuit_open"
	case errors.Is(err, errSecretRequired):
		return "secret_required"
	}
	return "_OTHER"
}
