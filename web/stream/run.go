package stream

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/elysia-go/elysia/internal/tracing"
	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/tree"
	"github.com/elysia-go/elysia/web"
)

// queryBody is the body of POST /query/:user_id/:conversation_id.
type queryBody struct {
	Query   string `json:"query"`
	QueryID string `json:"query_id"`
}

// wsMessage is one message a WebSocket client sends to start a query.
type wsMessage struct {
	UserID         string `json:"user_id"`
	ConversationID string `json:"conversation_id"`
	QueryID        string `json:"query_id"`
	Query          string `json:"query"`
	// CollectionNames comes with every query of Weaviate Elysia's own
	// frontend (beside route and mimick), and with no other client's: it
	// marks the query as that frontend's, whose events go out in
	// ElysiaFrontendForm. This service has no collections to choose from.
	CollectionNames json.RawMessage `json:"collection_names"`
}

// elysiaFrontend reports whether m came from Weaviate Elysia's own frontend.
func (m wsMessage) elysiaFrontend() bool { return len(m.CollectionNames) > 0 }

// decodeQueryBody decodes and checks the body of a query request.
func (s *Streams) decodeQueryBody(body []byte) (queryBody, error) {
	var q queryBody
	if err := s.k.DecodeJSON(body, &q, false, "query"); err != nil {
		return queryBody{}, err
	}
	if err := s.k.CheckIDs("query_id", q.QueryID); err != nil {
		return queryBody{}, err
	}
	if q.QueryID == "" {
		q.QueryID = tools.NewID()
	}
	return q, nil
}

// run is one query running on its own goroutine, owned by the stream that
// started it: the stream reads events until done delivers the result, and
// never returns before that.
type run struct {
	events <-chan tools.Envelope
	// done receives RunQuery's error once, after every envelope it emitted
	// was queued on events.
	done <-chan error
}

// runBuffer is how many envelopes a run may emit ahead of a slow client:
// about a query's worth (a list, a call and an answer emit 11). The
// buffer is allocated whole for every query: at 64 it was 4 % of the bytes
// a query allocated.
const runBuffer = 16

// socketBuffer is how many envelopes a WebSocket's queries, together, may
// queue ahead of a slow client; one per socket.
const socketBuffer = 64

// startRun calls Runner.RunQuery on a new goroutine. Cancelling ctx ends
// the run; the caller must still wait for done.
func (s *Streams) startRun(ctx context.Context, userID, convID, queryID, query string) run {
	// A stop ends the run's ctx like a client that goes away, with the
	// cause tree.ErrStopped; the stream itself goes on, so the client sees
	// the run end: a status saying it was stopped, then completed (which
	// tree's runs send, and save, themselves).
	spanCtx, span := startQuery(ctx, queryID)
	runCtx, cancel := context.WithCancelCause(spanCtx)
	untrack := s.running.track(queryKey{userID, convID, queryID}, func() { cancel(tree.ErrStopped) })
	undrain := s.k.TrackRun(func() { cancel(errShuttingDown) })
	events := make(chan tools.Envelope, runBuffer)
	done := make(chan error, 1)
	var completed atomic.Bool // the run emitted completed
	emit := func(env tools.Envelope) {
		if env.Type == tools.EventCompleted {
			completed.Store(true)
		}
		select {
		case events <- env:
		case <-ctx.Done():
		}
	}
	go func() {
		var err error
		defer func() {
			if r := recover(); r != nil {
				s.logger.ErrorContext(ctx, "query run panicked", slog.Any(logKeyPanic, r))
				err = errors.New("query run panicked")
			}
			endQuery(span, err)
			done <- err
		}()
		defer cancel(nil)
		defer untrack()
		defer undrain()
		err = s.runner.RunQuery(runCtx, userID, convID, queryID, query, emit)
		if err != nil && errors.Is(context.Cause(runCtx), errShuttingDown) && ctx.Err() == nil {
			for _, env := range shutdownEnvelopes(userID, convID, queryID) {
				emit(env)
			}
			err = nil
		}
		if err != nil && errors.Is(context.Cause(runCtx), tree.ErrStopped) && ctx.Err() == nil {
			// A Runner that did not tell the client itself.
			stopped := []tools.Event{{Type: tools.EventStatus, Payload: map[string]any{"text": "Stopped by the user.", "stopped": true}},
				{Type: tools.EventCompleted, Payload: map[string]any{}}}
			for _, ev := range stopped {
				if env, nerr := tools.NewEnvelope(ev, userID, convID, queryID); nerr == nil && !completed.Load() {
					emit(env)
				}
			}
			err = nil
		}
	}()
	return run{events: events, done: done}
}

// runErrorEnvelope reports a failed run to a stream client as an error
// event. It logs server-side failures once; ok is false when there is
// nothing to send (the client went away).
func (s *Streams) runErrorEnvelope(ctx context.Context, err error, userID, convID, queryID string) (tools.Envelope, bool) {
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return tools.Envelope{}, false
	}
	status, msg := web.PublicError(ctx, err)
	if status >= 500 {
		s.logger.ErrorContext(ctx, "query failed", slog.String(logKeyUserID, userID),
			slog.String(logKeyConversationID, convID), slog.String(logKeyQueryID, queryID), slog.Any(logKeyErr, err))
	}
	return errorEnvelope(msg, userID, convID, queryID), true
}

// errorEnvelope returns an error event with the given text.
func errorEnvelope(text, userID, convID, queryID string) tools.Envelope {
	env, _ := tools.NewEnvelope(tools.Event{Type: tools.EventError, Payload: tools.StatusPayload{Text: text}},
		userID, convID, queryID) // a StatusPayload always marshals
	return env
}

// logWriteTimeout reports a stream ended because a write to its client
// missed the write timeout: the client stopped reading but kept its
// connection open.
func (s *Streams) logWriteTimeout(ctx context.Context, stream, userID, convID, queryID string) {
	s.logger.WarnContext(ctx, "stream write timed out: client stopped reading; ending the stream",
		slog.String(logKeyStream, stream), slog.String(logKeyUserID, userID), slog.String(logKeyConversationID, convID),
		slog.String(logKeyQueryID, queryID), slog.Duration(logKeyTimeout, s.writeTimeout))
}

// publicText is what the client is told about err (web.PublicError).
func publicText(ctx context.Context, err error) string {
	_, msg := web.PublicError(ctx, err)
	return msg
}

// tracerName is the instrumentation scope of the query spans.
const tracerName = "github.com/elysia-go/elysia/web/stream"

// tracePerQueryKey marks a ctx whose queries each start a trace of their
// own: a WebSocket's, whose one HTTP request carries many queries.
type tracePerQueryKey struct{}

func withTracePerQuery(ctx context.Context) context.Context {
	return context.WithValue(ctx, tracePerQueryKey{}, true)
}

// startQuery starts the span of one query run: the child of its HTTP
// request's span, or, on a WebSocket, the root of a trace of its own linked
// to the socket's span, so that each query is one trace.
func startQuery(ctx context.Context, queryID string) (context.Context, trace.Span) {
	if !tracing.On() {
		return ctx, tracing.Skipped
	}
	opts := []trace.SpanStartOption{trace.WithAttributes(
		attribute.String("elysia.query_id", queryID),
		attribute.String("elysia.request_id", web.RequestID(ctx)),
	)}
	if ctx.Value(tracePerQueryKey{}) != nil {
		opts = append(opts, trace.WithNewRoot(), trace.WithLinks(trace.LinkFromContext(ctx)))
	}
	return otel.Tracer(tracerName).Start(ctx, "query", opts...)
}

// endQuery ends a query's span with its outcome.
func endQuery(span trace.Span, err error) {
	if err != nil {
		span.SetAttributes(attribute.String("error.type", "query_failed"))
		span.SetStatus(codes.Error, "")
	}
	span.End()
}
