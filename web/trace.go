package web

import (
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/elysia-go/elysia/internal/tracing"
)

// tracerName is the instrumentation scope of the server's spans.
const tracerName = "github.com/elysia-go/elysia/web"

// traceMiddleware starts the span of one HTTP request, continuing the trace
// of a client that sent traceparent. It is named by the route template
// ("POST /query/:user_id/:conversation_id"), never the path, so names stay
// few; the request id is an attribute. No header, query string or body is
// recorded. With no tracer provider set it starts nothing (tracing.On);
// with one, the attributes are built only for a span that records.
func traceMiddleware(c *gin.Context) {
	if !tracing.On() {
		c.Next()
		return
	}
	ctx := otel.GetTextMapPropagator().Extract(c.Request.Context(), propagation.HeaderCarrier(c.Request.Header))
	route := routeOf(c)
	ctx, span := otel.Tracer(tracerName).Start(ctx, c.Request.Method+" "+route, trace.WithSpanKind(trace.SpanKindServer))
	defer span.End()
	recording := span.IsRecording()
	if recording {
		span.SetAttributes(
			attribute.String("http.request.method", c.Request.Method),
			attribute.String("http.route", route),
			attribute.String("elysia.request_id", RequestID(ctx)),
		)
	}
	c.Request = c.Request.WithContext(ctx)
	c.Next()
	if !recording {
		return
	}
	status := c.Writer.Status()
	span.SetAttributes(attribute.Int("http.response.status_code", status))
	if status >= http.StatusInternalServerError {
		span.SetAttributes(attribute.String("error.type", strconv.Itoa(status)))
		span.SetStatus(codes.Error, "")
	}
}
