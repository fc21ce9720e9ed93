// Package tracing tells the packages that start spans whether anyone
// records them.
//
// cmd/elysia sets a tracer provider only when the OTEL_* variables ask for
// traces. Until then every span is OpenTelemetry's global no-op, yet
// starting one still takes the global provider's lock, allocates the span
// and a context, and builds its name and attributes: on every request,
// action and MCP call, for nobody. A package checks On before it starts a
// span, and without a provider it skips the span, which changes nothing a
// reader or a server could see (no provider also means no propagator
// sends a trace context on).
package tracing

import (
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// unset is the global provider as the process starts: OpenTelemetry's
// no-op delegate, until otel.SetTracerProvider replaces it.
var unset = otel.GetTracerProvider()

// On reports whether a tracer provider has been set, so that spans may
// record.
func On() bool { return otel.GetTracerProvider() != unset }

// Skipped is the span a package returns, with its ctx unchanged, for a
// span it did not start (On is false): ending it or setting its
// attributes does nothing.
var Skipped trace.Span = noop.Span{}
