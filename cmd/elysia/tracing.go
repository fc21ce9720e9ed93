package main

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// traceFlushTimeout bounds how long stopping the service waits for the
// last spans to reach the collector.
const traceFlushTimeout = 5 * time.Second

// tracingEnabled reports whether the standard OTEL_* variables ask for
// traces: an OTLP endpoint is set, and neither OTEL_SDK_DISABLED=true nor
// OTEL_TRACES_EXPORTER=none says otherwise.
func tracingEnabled(lookup func(string) (string, bool)) bool {
	env := func(k string) string { v, _ := lookup(k); return strings.TrimSpace(v) }
	if env("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		return false
	}
	if disabled, err := strconv.ParseBool(env("OTEL_SDK_DISABLED")); err == nil && disabled {
		return false
	}
	return !strings.EqualFold(env("OTEL_TRACES_EXPORTER"), "none")
}

// startTracing sets the process's tracer provider and W3C trace-context
// propagator when the OTEL_* variables ask for traces (tracingEnabled):
// spans go in batches to the OTLP/HTTP endpoint, configured by the
// exporter's own variables (endpoint, headers, compression, timeout,
// OTEL_BSP_*, OTEL_TRACES_SAMPLER, OTEL_SERVICE_NAME,
// OTEL_RESOURCE_ATTRIBUTES). Otherwise it does nothing: the global no-op
// provider stays, and nothing is exported or sent on to servers. The
// returned stop flushes what is left, bounded by traceFlushTimeout.
func startTracing(ctx context.Context, lookup func(string) (string, bool), logger *slog.Logger) (stop func(), err error) {
	if !tracingEnabled(lookup) {
		return func() {}, nil
	}
	for _, k := range []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"} {
		if v, _ := lookup(k); v != "" && v != "http/protobuf" {
			return nil, usageErr("%s=%q: traces are exported over OTLP/HTTP only; set it to http/protobuf or leave it unset", k, v)
		}
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, usageErr("OTLP trace exporter: %v", err)
	}
	// The service name defaults to elysia; OTEL_SERVICE_NAME and
	// OTEL_RESOURCE_ATTRIBUTES, read after it, win.
	res, err := resource.New(ctx, resource.WithTelemetrySDK(),
		resource.WithAttributes(attribute.String("service.name", "elysia")), resource.WithFromEnv())
	if err != nil {
		return nil, usageErr("OTEL_RESOURCE_ATTRIBUTES: %v", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	// Export failures are logged, never fatal: the service works without
	// its collector.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		logger.Warn("exporting traces", logKeyErr, err)
	}))
	logger.Info("exporting traces over OTLP/HTTP")
	return func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), traceFlushTimeout)
		defer cancel()
		if err := tp.Shutdown(sctx); err != nil {
			logger.Warn("flushing the last traces", logKeyErr, fmt.Errorf("within %v: %w", traceFlushTimeout, err))
		}
	}, nil
}

// traceLogHandler adds the trace and span ids of the span in the record's
// context to every log record, so a request's log lines (request_id) and
// its trace (trace_id) can be joined. Without a span it adds nothing.
type traceLogHandler struct{ slog.Handler }

func (h traceLogHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return h.Handler.Handle(ctx, r)
}

func (h traceLogHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return traceLogHandler{h.Handler.WithAttrs(as)}
}

func (h traceLogHandler) WithGroup(name string) slog.Handler {
	return traceLogHandler{h.Handler.WithGroup(name)}
}

// commandTracerName is the instrumentation scope of the one-shot commands'
// own spans (elysia query, elysia mcp call).
const commandTracerName = "github.com/elysia-go/elysia/cmd/elysia"

// startCommandSpan starts the root span of a one-shot command, under which
// the command's work (a query's decisions, a gateway action) is traced as
// `elysia serve` traces it under a request. With no tracer provider set
// (startTracing) it costs next to nothing.
func startCommandSpan(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return otel.Tracer(commandTracerName).Start(ctx, name, trace.WithAttributes(attrs...))
}

// endCommandSpan ends a command's span with its outcome.
func endCommandSpan(span trace.Span, err error) {
	if err != nil {
		span.SetAttributes(attribute.String("error.type", "command_failed"))
		span.SetStatus(codes.Error, "")
	}
	span.End()
}
