package sessions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/mcpendpoint/internal/jsonrpc"
	"github.com/elysia-go/elysia/mcpendpoint/internal/sessionbook"
	"github.com/elysia-go/elysia/mcpgateway"
)

// A legacy SSE session is its GET /sse stream, held by the replica that
// serves it; the client posts each message to /message, which a load
// balancer may send to any replica. The holder records the session in the
// SessionStore (with no initialize: the id and the user are what the
// others need) and keeps the record fresh while the stream is open; a
// replica that is posted a message of a session it does not hold checks
// the record for the asking user, sends the message through the Relay
// and answers 202 at once, as mcp-go does; the holder gives it to its
// mcp-go SSE server, which writes the answer onto the client's stream.
// The record goes when the stream ends.
//
// If the holder is gone (it crashed, or the Relay lost the message), the
// message is lost: so is the client's stream, on which alone its answer
// could have come, and the client must open a new session. A holder that
// crashed leaves its record, which stops being found within
// SSEIdle of its last refresh.

// sseForgetTimeout bounds removing an SSE session's shared record once its
// stream has ended.
const sseForgetTimeout = 10 * time.Second

// sseHoldKey holds in a GET /sse request's ctx the *sseHold the session id
// generator fills.
type sseHoldKey struct{}

// sseHold is an SSE stream's shared record: its session id, once
// generated, and the goroutine that keeps the record fresh.
type sseHold struct {
	ctx  context.Context //nolint:containedctx // the stream's request, which the refreshing goroutine lives for
	user string
	id   string
	wg   sync.WaitGroup
}

// SSEIdle is how long an SSE session's record is found after its last
// refresh: three times as long as its holder refreshes it, and no longer
// than SessionIdleTTL.
func (h *Hub) SSEIdle() time.Duration {
	return min(3*h.touchEvery(), h.SessionIdleTTL)
}

// ServeSSE serves a GET /sse stream of user and, with a SessionStore,
// shares its session with the other replicas while it is open.
func (h *Hub) ServeSSE(w http.ResponseWriter, r *http.Request, user string) {
	if h.Sessions == nil || r.Method != http.MethodGet {
		h.sse.ServeHTTP(w, r)
		return
	}
	ctx, stop := context.WithCancel(r.Context())
	hold := &sseHold{ctx: ctx, user: user}
	h.sse.ServeHTTP(w, r.WithContext(context.WithValue(ctx, sseHoldKey{}, hold)))
	stop()
	hold.wg.Wait()
	if hold.id == "" {
		return
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), sseForgetTimeout)
	defer cancel()
	if err := h.Sessions.DeleteSession(fctx, hold.id, user); err != nil && !errors.Is(err, ErrUnknownSession) {
		h.Logger.Warn("removing an ended SSE session's record: the other replicas find it for a few minutes more", logKeyErr, err)
	}
}

// GenerateSSE is the SSE transport's session id generator: it records
// the new session in the SessionStore, if there is one, and keeps the
// record fresh until the stream ends (ServeSSE). When the SessionStore
// fails, the session is served on this replica only.
func (h *Hub) GenerateSSE(ctx context.Context, r *http.Request) (string, error) {
	id, err := h.Book.GenerateSSE(ctx, r)
	hold, _ := r.Context().Value(sseHoldKey{}).(*sseHold)
	if err != nil || hold == nil {
		return id, err
	}
	pctx, cancel := context.WithTimeout(r.Context(), h.StoreWait)
	defer cancel()
	if err := h.Sessions.PutSession(pctx, id, hold.user, SharedSession{}, h.SessionIdleTTL); err != nil {
		h.Logger.Warn("recording an SSE session for the other replicas: it is served on this one only", logKeyErr, err)
		return id, nil
	}
	hold.id = id
	hold.wg.Go(func() { h.refreshSSE(hold) })
	return id, nil
}

// refreshSSE marks hold's session used in the SessionStore every touchEvery
// until its stream ends, recording it again if its record is gone.
func (h *Hub) refreshSSE(hold *sseHold) {
	t := time.NewTicker(h.touchEvery())
	defer t.Stop()
	for {
		select {
		case <-hold.ctx.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(hold.ctx, h.StoreWait)
		err := h.Sessions.TouchSession(ctx, hold.id, hold.user, "", h.SessionIdleTTL)
		if errors.Is(err, ErrUnknownSession) { // the record was lost: the stream is still open
			err = h.Sessions.PutSession(ctx, hold.id, hold.user, SharedSession{}, h.SessionIdleTTL)
		}
		cancel()
		if err != nil && hold.ctx.Err() == nil {
			h.Logger.Warn("refreshing an SSE session's record for the other replicas", logKeyErr, err)
		}
	}
}

// ServeSSEMessage serves a POST /message of user: mcp-go serves it when
// the session's stream is open here; else, when another replica holds
// the session for user, the message goes there through the Relay and the
// client gets 202. Any other session gets 404.
func (h *Hub) ServeSSEMessage(w http.ResponseWriter, q *Request) {
	r, user := q.R, q.User
	id := r.URL.Query().Get("sessionId")
	if h.Book.OwnedBy(id, user) {
		h.sse.ServeHTTP(w, r)
		return
	}
	if h.Sessions == nil || h.Relay == nil || r.Method != http.MethodPost ||
		!strings.HasPrefix(id, sessionbook.SSEPrefix) || len(id) > maxSessionIDLen {
		jsonrpc.WriteError(w, http.StatusNotFound, mcp.INVALID_REQUEST, "unknown MCP session: initialize a new one")
		return
	}
	sctx, cancel := context.WithTimeout(r.Context(), h.StoreWait)
	_, err := h.Sessions.Session(sctx, id, user, h.SSEIdle())
	cancel()
	switch {
	case errors.Is(err, ErrUnknownSession):
		jsonrpc.WriteError(w, http.StatusNotFound, mcp.INVALID_REQUEST, "unknown MCP session: initialize a new one")
		return
	case err != nil:
		h.Logger.Warn("looking up an SSE session another replica holds", logKeyErr, err)
		WriteStoreDown(w)
		return
	}
	body := q.Body
	if !json.Valid(body) {
		jsonrpc.WriteError(w, http.StatusBadRequest, mcp.PARSE_ERROR, "Parse error: the message is not JSON")
		return
	}
	base := h.Base(r.Context())
	err = h.publish(Message{Kind: relaySSEMessage, Session: idHash(id), Base: base, Body: body})
	if errors.Is(err, ErrRelayTooLarge) {
		jsonrpc.WriteError(w, http.StatusRequestEntityTooLarge, mcp.INVALID_REQUEST,
			fmt.Sprintf("message over the limit of %d bytes for a session held by another replica", MaxRelayMessage))
		return
	}
	if err != nil {
		h.Logger.Warn("relaying an SSE message to the replica that holds its session", logKeyErr, err)
		jsonrpc.WriteError(w, http.StatusServiceUnavailable, mcp.INTERNAL_ERROR, "the message could not reach its MCP session: try again")
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// receiveSSEMessage gives the client's message another replica relayed
// (relaySSEMessage) to the mcp-go SSE server, when this replica holds its
// session: mcp-go answers on the session's stream. It does not block:
// mcp-go handles the message on a goroutine of its own, with a ctx not
// cancelled when the request made here returns.
func (h *Hub) receiveSSEMessage(m *Message) {
	id := h.Book.ByHash(m.Session)
	if !strings.HasPrefix(id, sessionbook.SSEPrefix) {
		return // not held here
	}
	user, ok := h.Book.Owner(id)
	if !ok {
		return
	}
	ctx := mcpgateway.WithUser(context.Background(), user)
	if m.Base != "" {
		ctx = h.WithBase(ctx, m.Base)
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, "/message?sessionId="+url.QueryEscape(id), bytes.NewReader(m.Body))
	if err != nil {
		return
	}
	r.Header.Set("Content-Type", "application/json")
	w := &discardWriter{h: http.Header{}}
	h.sse.ServeHTTP(w, r)
	if w.code != http.StatusAccepted {
		h.Logger.Warn("serving an SSE message another replica relayed", logKeyStatus, w.code)
	}
}
