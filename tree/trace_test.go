package tree

import (
	"context"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestModelCallTokens: the token counts reach the model call's span under
// the names each langchaingo client uses (openai, anthropic), and a
// client that reports none adds no usage attributes.
func TestModelCallTokens(t *testing.T) {
	for _, tt := range []struct {
		name    string
		info    map[string]any
		in, out int64
	}{
		{"openai", map[string]any{"PromptTokens": 12, "CompletionTokens": 3, "TotalTokens": 15}, 12, 3},
		{"anthropic", map[string]any{"InputTokens": 7, "OutputTokens": 2}, 7, 2},
		{"none", map[string]any{}, -1, -1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			_, span := tp.Tracer("t").Start(context.Background(), "chat m")
			endModelCall(span, &llms.ContentResponse{Choices: []*llms.ContentChoice{{GenerationInfo: tt.info, StopReason: "stop"}}}, nil)
			ended := rec.Ended()
			if len(ended) != 1 {
				t.Fatalf("%d spans ended, want 1", len(ended))
			}
			got := map[attribute.Key]attribute.Value{}
			for _, kv := range ended[0].Attributes() {
				got[kv.Key] = kv.Value
			}
			for key, want := range map[attribute.Key]int64{"gen_ai.usage.input_tokens": tt.in, "gen_ai.usage.output_tokens": tt.out} {
				v, ok := got[key]
				switch {
				case want < 0 && ok:
					t.Errorf("%s = %v, want none", key, v.String())
				case want >= 0 && (!ok || v.AsInt64() != want):
					t.Errorf("%s = %v (set %v), want %d", key, v.String(), ok, want)
				}
			}
			if v := got["gen_ai.response.finish_reasons"]; len(v.AsStringSlice()) != 1 || v.AsStringSlice()[0] != "stop" {
				t.Errorf("finish reasons = %v", v.String())
			}
		})
	}
}
