package web

import (
	"context"
	"errors"
	"log/slog"

	"github.com/elysia-go/elysia/tools"
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
}

// decodeQueryBody decodes and checks the body of a query request.
func decodeQueryBody(body []byte) (queryBody, error) {
	var q queryBody
	if err := decodeJSON(body, &q, false, "query"); err != nil {
		return queryBody{}, err
	}
	if err := checkIDs("query_id", q.QueryID); err != nil {
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

// runBuffer is how many envelopes a run may emit ahead of a slow client.
const runBuffer = 64

// startRun calls Runner.RunQuery on a new goroutine. Cancelling ctx ends
// the run; the caller must still wait for done.
func (s *Server) startRun(ctx context.Context, userID, convID, queryID, query string) run {
	// A stop ends the run's ctx like a client that goes away; the stream
	// itself goes on, so the client sees the run end: a status saying it
	// was stopped, then completed.
	spanCtx, span := startQuery(ctx, queryID)
	runCtx, cancel := context.WithCancelCause(spanCtx)
	untrack := s.running.track(queryKey{userID, convID, queryID}, func() { cancel(errStopped) })
	undrain := s.drain.trackRun(func() { cancel(errShuttingDown) })
	events := make(chan tools.Envelope, runBuffer)
	done := make(chan error, 1)
	emit := func(env tools.Envelope) {
		select {
		case events <- env:
		case <-ctx.Done():
		}
	}
	go func() {
		var err error
		defer func() {
			if r := recover(); r != nil {
				s.logger.ErrorContext(ctx, "query run panicked", slog.Any("panic", r))
				err = errors.New("query run panicked")
			}
			endQuery(span, err)
			done <- err
		}()
		defer cancel(nil)
		defer untrack()
		defer undrain()
		err = s.deps.Runner.RunQuery(runCtx, userID, convID, queryID, query, emit)
		if err != nil && errors.Is(context.Cause(runCtx), errShuttingDown) && ctx.Err() == nil {
			for _, env := range shutdownEnvelopes(userID, convID, queryID) {
				emit(env)
			}
			err = nil
		}
		if err != nil && errors.Is(context.Cause(runCtx), errStopped) && ctx.Err() == nil {
			for _, ev := range []tools.Event{tools.NewStatus("Stopped by the user."), {Type: tools.EventCompleted, Payload: map[string]any{}}} {
				if env, nerr := tools.NewEnvelope(ev, userID, convID, queryID); nerr == nil {
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
func (s *Server) runErrorEnvelope(ctx context.Context, err error, userID, convID, queryID string) (tools.Envelope, bool) {
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return tools.Envelope{}, false
	}
	status := statusOf(err)
	if status >= 500 {
		s.logger.ErrorContext(ctx, "query failed", slog.String("user_id", userID),
			slog.String("conversation_id", convID), slog.String("query_id", queryID), slog.Any("err", err))
	}
	return errorEnvelope(publicMessage(ctx, status, err), userID, convID, queryID), true
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
func (s *Server) logWriteTimeout(ctx context.Context, stream, userID, convID, queryID string) {
	s.logger.WarnContext(ctx, "stream write timed out: client stopped reading; ending the stream",
		slog.String("stream", stream), slog.String("user_id", userID), slog.String("conversation_id", convID),
		slog.String("query_id", queryID), slog.Duration("timeout", s.writeTimeout))
}
