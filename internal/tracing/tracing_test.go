package tracing

import (
	"testing"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

func TestOn(t *testing.T) {
	if On() {
		t.Fatal("On before any provider was set")
	}
	if Skipped.IsRecording() {
		t.Error("the skipped span records")
	}
	tp := sdktrace.NewTracerProvider()
	defer func() { _ = tp.Shutdown(t.Context()) }()
	otel.SetTracerProvider(tp)
	if !On() {
		t.Error("not On with a provider set")
	}
}
