package tree

import (
	"context"
	"errors"

	"github.com/tmc/langchaingo/llms"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/elysia-go/elysia/internal/tracing"
)

// Traces: a span per decision and one per model call, the latter named and
// tagged as the OpenTelemetry GenAI semantic conventions say
// (https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-spans/). With
// no tracer provider set they are not started (tracing.On); with one,
// their attributes are built only for a span that records.

// tracerName is the instrumentation scope of the tree's spans.
const tracerName = "github.com/elysia-go/elysia/tree"

func tracer() trace.Tracer { return otel.Tracer(tracerName) }

// startDecision starts the span of one decision at node.
func startDecision(ctx context.Context, node string) (context.Context, trace.Span) {
	if !tracing.On() {
		return ctx, tracing.Skipped
	}
	ctx, span := tracer().Start(ctx, "decision")
	if span.IsRecording() {
		span.SetAttributes(attribute.String("elysia.tree.node", node))
	}
	return ctx, span
}

// endDecision ends a decision's span with the option chosen, or its error.
func endDecision(span trace.Span, d decision, err error) {
	if !span.IsRecording() {
		span.End()
		return
	}
	switch {
	case err != nil:
		span.SetAttributes(attribute.String("error.type", errorType(err)))
		span.SetStatus(codes.Error, "no decision")
	case d.opt != nil:
		span.SetAttributes(attribute.String("elysia.tree.decision", d.opt.id))
	}
	span.End()
}

// errorType is a low-cardinality error.type for err, never its text.
func errorType(err error) string {
	switch {
	case errors.Is(err, errNoValidChoice):
		return "no_valid_choice"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	return "_OTHER"
}

// startModelCall starts the client span of one chat call to the model.
func (o *Options) startModelCall(ctx context.Context) (context.Context, trace.Span) {
	if !tracing.On() {
		return ctx, tracing.Skipped
	}
	name := "chat"
	if o.ModelName != "" {
		name += " " + o.ModelName
	}
	ctx, span := tracer().Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient))
	if !span.IsRecording() {
		return ctx, span
	}
	span.SetAttributes(attribute.String("gen_ai.operation.name", "chat"))
	if o.ModelName != "" {
		span.SetAttributes(attribute.String("gen_ai.request.model", o.ModelName))
	}
	if o.ModelProvider != "" {
		span.SetAttributes(attribute.String("gen_ai.provider.name", o.ModelProvider))
	}
	return ctx, span
}

// endModelCall ends a model call's span with the tokens the provider's
// client reports (langchaingo puts them in GenerationInfo, under names
// that differ by provider) and its finish reason.
func endModelCall(span trace.Span, resp *llms.ContentResponse, err error) {
	if !span.IsRecording() {
		span.End()
		return
	}
	if err != nil {
		span.SetAttributes(attribute.String("error.type", errorType(err)))
		span.SetStatus(codes.Error, "model call failed")
	}
	if resp != nil && len(resp.Choices) > 0 {
		info := resp.Choices[0].GenerationInfo
		if n, ok := tokenCount(info, "PromptTokens", "InputTokens", "input_tokens", "prompt_tokens"); ok {
			span.SetAttributes(attribute.Int("gen_ai.usage.input_tokens", n))
		}
		if n, ok := tokenCount(info, "CompletionTokens", "OutputTokens", "output_tokens", "completion_tokens"); ok {
			span.SetAttributes(attribute.Int("gen_ai.usage.output_tokens", n))
		}
		if r := resp.Choices[0].StopReason; r != "" && len(r) <= 64 {
			span.SetAttributes(attribute.StringSlice("gen_ai.response.finish_reasons", []string{r}))
		}
	}
	span.End()
}

// tokenCount returns the first of keys in info that holds a whole number.
func tokenCount(info map[string]any, keys ...string) (int, bool) {
	for _, k := range keys {
		switch v := info[k].(type) {
		case int:
			return v, true
		case int32:
			return int(v), true
		case int64:
			return int(v), true
		case float64:
			return int(v), true
		}
	}
	return 0, false
}
