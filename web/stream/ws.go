package stream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/gin-gonic/gin"

	"github.com/elysia-go/elysia/tools"
)

// minPingTimeout bounds how long a WebSocket ping waits for its pong.
const minPingTimeout = 5 * time.Second

// queryWS serves GET /ws/query, Elysia's query WebSocket. Each text message
// {"user_id", "conversation_id", "query_id", "query"} starts a query; its
// envelopes come back as text messages, and up to Options.MaxQueriesPerSocket
// queries may run at once over one socket. A message for a user the key may
// not act for, or one over that limit, gets an error event, and the socket
// stays open. After each idle heartbeat interval the server sends a ping.
// Closing the socket cancels every query running on it, and so does a
// write that misses web.Options.StreamWriteTimeout, which closes the socket.
// When the server drains (Drain), the socket is closed with status 1001
// once its queries have sent their last events.
func (s *Streams) queryWS(c *gin.Context) {
	conn, accepted := s.k.AcceptWS(c)
	if !accepted {
		return
	}
	defer func() { _ = conn.CloseNow() }() // backstop; fails harmlessly after the Close below
	// readMessage enforces the limit; the library's stays as a backstop.
	conn.SetReadLimit(s.k.MaxBody() + 1)

	// The socket's lifetime is this handler's: ctx ends when the reader
	// fails (the client closed) or the handler returns.
	ctx, cancel := context.WithCancel(withTracePerQuery(c.Request.Context()))
	defer cancel()
	ws := &wsSession{
		s: s, conn: conn, mayActFor: func(user string) bool { return s.k.MayActFor(c, user) },
		out:   make(chan tools.Envelope, socketBuffer),
		slots: make(chan struct{}, s.maxSocketQueries),
		wake:  make(chan struct{}, 1),
	}
	defer s.k.TrackStream(ws.goAway, func() { _ = conn.CloseNow() })()
	ws.wg.Go(func() { ws.writeLoop(ctx, cancel) })
	ws.readLoop(ctx)
	cancel()
	ws.wg.Wait()
	// The peer may be gone already; there is nobody left to tell.
	_ = conn.Close(websocket.StatusNormalClosure, "")
}

// wsSession is one WebSocket connection. The handler's goroutine reads;
// writeLoop owns every write; each query runs on its own goroutine. All are
// tracked by wg and end with the handler.
type wsSession struct {
	s    *Streams
	conn *websocket.Conn
	// mayActFor reports whether the socket's key may act for a user; it
	// is called on the handler's goroutine only (readLoop).
	mayActFor func(user string) bool
	out       chan tools.Envelope
	// slots holds a token for each query running on the socket; its
	// capacity is the server's per-socket limit. readLoop takes a token
	// before starting a query, and the query gives it back.
	slots chan struct{}
	wg    sync.WaitGroup
	// wake tells writeLoop to look whether the socket is leaving: going
	// away with no query left.
	wake chan struct{}

	// mu guards queries and goingAway: how many queries run on the
	// socket, and whether Drain asked it to close.
	mu        sync.Mutex
	queries   int
	goingAway bool
}

// send queues env for the writer; it gives up when the socket is gone.
func (ws *wsSession) send(ctx context.Context, env tools.Envelope) {
	select {
	case ws.out <- env:
	case <-ctx.Done():
	}
}

// readLoop reads query messages until the socket fails or ctx ends.
func (ws *wsSession) readLoop(ctx context.Context) {
	for {
		typ, data, err := ws.readMessage(ctx)
		if err != nil {
			var ce websocket.CloseError
			if !errors.As(err, &ce) && ctx.Err() == nil {
				ws.s.logger.DebugContext(ctx, "websocket read ended", slog.Any(logKeyErr, err))
			}
			return
		}
		if typ != websocket.MessageText {
			ws.send(ctx, errorEnvelope("want a text message holding JSON", "", "", ""))
			continue
		}
		var ctl wsControl
		if err := ws.s.k.DecodeJSON(data, &ctl, false); err == nil && ctl.Type != "" && ctl.Type != "query" {
			ws.control(ctx, ctl)
			continue
		}
		var m wsMessage
		if err := ws.s.k.DecodeJSON(data, &m, false, "user_id", "conversation_id", "query"); err != nil {
			ws.send(ctx, errorEnvelope(wsText(err.Error()), m.UserID, m.ConversationID, m.QueryID))
			continue
		}
		if err := ws.s.k.CheckIDs("user_id", m.UserID, "conversation_id", m.ConversationID, "query_id", m.QueryID); err != nil {
			ws.send(ctx, errorEnvelope(err.Error(), m.UserID, m.ConversationID, m.QueryID))
			continue
		}
		if !ws.mayActFor(m.UserID) {
			ws.send(ctx, errorEnvelope(ws.s.k.Forbidden(m.UserID).Error(), m.UserID, m.ConversationID, m.QueryID))
			continue
		}
		if m.QueryID == "" {
			m.QueryID = tools.NewID()
		}
		if !ws.begin() {
			ws.send(ctx, errorEnvelope(goingAwayReason, m.UserID, m.ConversationID, m.QueryID))
			continue
		}
		select {
		case ws.slots <- struct{}{}:
		default:
			ws.end()
			ws.send(ctx, errorEnvelope(ws.limitText(), m.UserID, m.ConversationID, m.QueryID))
			continue
		}
		ws.wg.Go(func() {
			defer ws.end()
			ws.runQuery(ctx, m)
		})
	}
}

// readMessage reads one message of at most the body limit. A larger one
// ends the socket with status 1009 (message too big) and a reason naming
// the limit: the WebSocket form of a 413. The library's own read limit
// would do the same, but with a reason one byte off the limit.
func (ws *wsSession) readMessage(ctx context.Context) (websocket.MessageType, []byte, error) {
	typ, r, err := ws.conn.Reader(ctx)
	if err != nil {
		return 0, nil, err
	}
	data, err := io.ReadAll(io.LimitReader(r, ws.s.k.MaxBody()+1))
	if err != nil {
		return 0, nil, err
	}
	if int64(len(data)) > ws.s.k.MaxBody() {
		reason := "message too large (limit " + sizeText(ws.s.k.MaxBody()) + ")"
		ws.s.logger.InfoContext(ctx, "websocket message over the limit", slog.Int64(logKeyLimit, ws.s.k.MaxBody()))
		_ = ws.conn.Close(websocket.StatusMessageTooBig, reason) // the peer may be gone; the socket ends either way
		return 0, nil, websocket.CloseError{Code: websocket.StatusMessageTooBig, Reason: reason}
	}
	return typ, data, nil
}

// wsText rewords body-decoding errors for a WebSocket message.
func wsText(msg string) string {
	const prefix = "invalid JSON body"
	if len(msg) >= len(prefix) && msg[:len(prefix)] == prefix {
		return "invalid JSON message" + msg[len(prefix):]
	}
	if msg == "missing JSON body" {
		return "empty message"
	}
	return msg
}

// limitText is the error a query over the per-socket limit gets.
func (ws *wsSession) limitText() string {
	return fmt.Sprintf("too many queries running on this socket (limit %d): wait for one to send completed before starting another",
		cap(ws.slots))
}

// runQuery runs one query of the socket and forwards its envelopes. It
// holds one of the socket's slots and frees it before the client can see
// the query end, so a client that waits for completed (or for the query's
// final error) before sending the next query is never refused.
func (ws *wsSession) runQuery(ctx context.Context, m wsMessage) {
	held := true
	free := func() {
		if held {
			held = false
			<-ws.slots
		}
	}
	defer free()
	r := ws.s.startRun(ctx, m.UserID, m.ConversationID, m.QueryID, m.Query)
	sentError := false
	elysia := m.elysiaFrontend()
	forward := func(env tools.Envelope) {
		if elysia {
			env = ElysiaFrontendForm(env)
		}
		sentError = sentError || env.Type == tools.EventError
		if env.Type == tools.EventCompleted {
			free()
		}
		ws.send(ctx, env)
	}
	for {
		select {
		case env := <-r.events:
			forward(env)
		case err := <-r.done:
			for drained := false; !drained; {
				select {
				case env := <-r.events:
					forward(env)
				default:
					drained = true
				}
			}
			free()
			if err != nil && !sentError {
				if env, ok := ws.s.runErrorEnvelope(ctx, err, m.UserID, m.ConversationID, m.QueryID); ok {
					ws.send(ctx, env)
				}
			}
			return
		}
	}
}

// writeLoop writes queued envelopes, and pings after each idle heartbeat
// interval. A failed write or ping ends the session, and so does a socket
// going away (Drain): once its queries have ended, the writer writes what
// they queued and closes the socket with status 1001.
func (ws *wsSession) writeLoop(ctx context.Context, cancel context.CancelFunc) {
	timer := time.NewTimer(ws.s.heartbeat)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ws.wake:
			if ws.leaving() {
				ws.flush(ctx)
				// The handshake waits for the peer's answer (the library bounds
				// it); the reader gets that answer and ends the session.
				_ = ws.conn.Close(websocket.StatusGoingAway, goingAwayReason) // the peer may be gone; the socket ends either way
				cancel()
				return
			}
			continue
		case env := <-ws.out:
			if err := ws.write(ctx, env); err != nil {
				cancel()
				return
			}
		case <-timer.C:
			pctx, pcancel := context.WithTimeout(ctx, max(2*ws.s.heartbeat, minPingTimeout))
			err := ws.conn.Ping(pctx)
			pcancel()
			if err != nil {
				cancel()
				return
			}
		}
		timer.Reset(ws.s.heartbeat)
	}
}

// flush writes the envelopes queued on the socket, without waiting for
// more; it stops at a failed write.
func (ws *wsSession) flush(ctx context.Context) {
	for {
		select {
		case env := <-ws.out:
			if ws.write(ctx, env) != nil {
				return
			}
		default:
			return
		}
	}
}

// write sends env within the write timeout. A write that misses it closes
// the socket (the library closes it when a write's ctx ends), and so ends
// the session.
func (ws *wsSession) write(ctx context.Context, env tools.Envelope) error {
	b, err := tools.Marshal(env)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeoutCause(ctx, ws.s.writeTimeout, errWriteTimeout)
	defer cancel()
	err = ws.conn.Write(wctx, websocket.MessageText, b)
	// The closed socket may end the session, and so ctx, before Write
	// returns; the cause says which came first.
	if err != nil && errors.Is(context.Cause(wctx), errWriteTimeout) {
		ws.s.logWriteTimeout(ctx, "websocket", env.UserID, env.ConversationID, env.QueryID)
	}
	return err
}
