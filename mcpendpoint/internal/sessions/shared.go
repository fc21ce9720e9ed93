package sessions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/mcpendpoint/internal/drain"
	"github.com/elysia-go/elysia/mcpendpoint/internal/jsonrpc"
	"github.com/elysia-go/elysia/mcpendpoint/internal/sessionbook"
	"github.com/elysia-go/elysia/mcpgateway"
)

// Replicas of one service share their Streamable HTTP sessions through a
// SessionStore: a session opened on one replica is recorded there, with
// what the client's initialize said, and another replica that is sent a
// request of it adopts it (it replays that initialize to mcp-go under the
// same session id, and the log level the client set). A DELETE removes
// the record and tells the other replicas through the Relay; a session
// unused for SessionIdleTTL on every replica is gone from all of them.

// SharedSession is an HTTP session of the endpoint as the replicas of the
// service share it.
type SharedSession struct {
	// ProtocolVersion is the version the session negotiated.
	ProtocolVersion string
	// Init is the client's initialize params, JSON: its capabilities and
	// info.
	Init []byte
	// LogLevel is the level the client set with logging/setLevel, or "".
	LogLevel string
}

// SessionStore keeps the endpoint's HTTP sessions where every replica of
// the service reads them. It keeps a session under its id and user (a
// store should keep neither in clear: the id is a bearer of the session),
// and a session unused for idle is gone. Its errors match
// ErrUnknownSession when the session is missing, another user's, or idle
// too long. Its methods are safe for concurrent use.
type SessionStore interface {
	// PutSession records session id of user, used now.
	PutSession(ctx context.Context, id, user string, s SharedSession, idle time.Duration) error
	// Session returns session id of user.
	Session(ctx context.Context, id, user string, idle time.Duration) (SharedSession, error)
	// TouchSession marks session id of user used now and, unless level
	// is "", sets its log level.
	TouchSession(ctx context.Context, id, user, level string, idle time.Duration) error
	// DeleteSession removes session id of user.
	DeleteSession(ctx context.Context, id, user string) error
}

// maxSessionIDLen bounds the session ids looked up in the SessionStore: the
// endpoint's own are 44 bytes.
const maxSessionIDLen = 128

// maxTouchEvery bounds how long a session's use goes unrecorded in the
// SessionStore; it is a quarter of SessionIdleTTL when that is shorter.
const maxTouchEvery = time.Minute

// storeRetryAfter is the Retry-After of a 503 the endpoint answers when
// the SessionStore fails.
const storeRetryAfter = 2 * time.Second

// idHash is the name of session id in the messages between the replicas:
// the SHA-256 of the id, in hex (sessionbook.Hash).
func idHash(id string) string {
	return sessionbook.Hash(id)
}

// touchEvery is how often a session's use here is recorded in the
// SessionStore.
func (h *Hub) touchEvery() time.Duration {
	return min(h.SessionIdleTTL/4, maxTouchEvery)
}

// ShareSession makes session id of user, which r names, served here when
// another replica opened it, and forgets it here when another replica
// ended it or it was idle on all of them: mcp-go's own checks then answer
// the request. Its work on the SessionStore, the wait for another
// request's adoption of the session included, is bounded by StoreWait as
// a whole. It returns an error when the session is not held here and the
// SessionStore could not say whether it exists (it failed, or did not
// answer in time): the request must then not be answered as for an
// unknown session, which tells the client to drop it. Failing to record
// the use of a session held here is only logged.
func (h *Hub) ShareSession(ctx context.Context, id, user string) error {
	ctx, cancel := context.WithTimeout(ctx, h.StoreWait)
	defer cancel()
	for {
		if c := h.Book.Adoption(id); c != nil { // mcp-go holds it only once the adoption is done
			select {
			case <-c:
			case <-ctx.Done():
				return fmt.Errorf("wait for another request's adoption of an MCP session: %w", ctx.Err())
			}
		}
		if h.Book.OwnedBy(id, user) {
			break
		}
		if !strings.HasPrefix(id, sessionbook.HTTPPrefix) || len(id) > maxSessionIDLen {
			return nil // not one of ours: unknown
		}
		done, first, _ := h.Book.StartAdopt(id)
		if !first {
			continue // another request adopts it now: wait for it, then look again
		}
		defer done()
		return h.adopt(ctx, id, user)
	}
	if !h.Book.TouchDue(id, h.touchEvery()) {
		return nil
	}
	err := h.Sessions.TouchSession(ctx, id, user, "", h.SessionIdleTTL)
	switch {
	case errors.Is(err, ErrUnknownSession):
		h.endHere(ctx, id)
	case err != nil:
		h.Logger.Warn("recording an MCP session's use for the other replicas", logKeyErr, err)
	}
	return nil
}

// adopt serves here session id of user that another replica opened: it
// replays the client's initialize to mcp-go under id, then the log level
// the client set. It does nothing for a session unknown to the
// SessionStore or another user's, and returns the SessionStore's other
// errors. The caller marks the adoption (sessionbook.Book.StartAdopt),
// so that the other requests of the session wait for it.
func (h *Hub) adopt(ctx context.Context, id, user string) error {
	s, err := h.Sessions.Session(ctx, id, user, h.SessionIdleTTL)
	if errors.Is(err, ErrUnknownSession) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read an MCP session another replica opened: %w", err)
	}
	ctx = sessionbook.WithAdoption(mcpgateway.WithUser(ctx, user), id)
	init, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": json.RawMessage(s.Init)})
	if err != nil {
		h.Logger.Warn("an MCP session another replica opened has initialize params that are not JSON", logKeyErr, err)
		return nil
	}
	if code := h.replay(ctx, http.MethodPost, "", "", init); code != http.StatusOK || !h.Book.OwnedBy(id, user) {
		h.Logger.Warn("adopting an MCP session another replica opened", logKeyStatus, code)
		return nil
	}
	if s.LogLevel == "" {
		return nil
	}
	level, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 0, "method": "logging/setLevel", "params": map[string]string{"level": s.LogLevel}})
	if code := h.replay(ctx, http.MethodPost, id, s.ProtocolVersion, level); code != http.StatusOK {
		h.Logger.Warn("setting the log level of an adopted MCP session", logKeyStatus, code)
	}
	return nil
}

// WriteStoreDown answers w 503 with Retry-After: the store could not say
// whether the request's session (or task) exists.
func WriteStoreDown(w http.ResponseWriter) {
	writeUnavailable(w, storeRetryAfter, "the MCP session could not be looked up: the database is unavailable; try again shortly")
}

// writeUnavailable answers w 503 with msg and a Retry-After of after:
// the request may succeed later, here or on another replica.
func writeUnavailable(w http.ResponseWriter, after time.Duration, msg string) {
	jsonrpc.WriteUnavailable(w, after, mcp.INTERNAL_ERROR, msg)
}

// WriteDraining answers w 503 with Retry-After: this replica is shutting
// down, another serves the request.
func WriteDraining(w http.ResponseWriter, msg string) {
	writeUnavailable(w, drain.RetryAfter, msg)
}

// endHere ends session id on this replica only, as a DELETE would: its
// calls are cancelled and its GET stream closed.
func (h *Hub) endHere(ctx context.Context, id string) {
	h.replay(sessionbook.WithEnding(ctx), http.MethodDelete, id, "", nil)
	h.CancelSession(id)
}

// replay sends mcp-go a request that the endpoint makes itself, of
// session id unless id is "", and returns the status of its answer, which
// is dropped.
func (h *Hub) replay(ctx context.Context, method, id, version string, body []byte) int {
	r, err := http.NewRequestWithContext(ctx, method, "/mcp", bytes.NewReader(body))
	if err != nil {
		return http.StatusInternalServerError
	}
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	if id != "" {
		r.Header.Set(mcpserver.HeaderKeySessionID, id)
	}
	if version != "" {
		r.Header.Set(mcpserver.HeaderKeyProtocolVersion, version)
	}
	w := &discardWriter{h: http.Header{}}
	h.http.ServeHTTP(w, r)
	if w.code == 0 {
		return http.StatusOK
	}
	return w.code
}

// discardWriter is the http.ResponseWriter of a replayed request.
type discardWriter struct {
	h    http.Header
	code int
}

func (w *discardWriter) Header() http.Header { return w.h }

func (w *discardWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return len(b), nil
}

func (w *discardWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

// recordSession keeps a session the client has just initialized here in
// the SessionStore (mcp-go's after-initialize hook), so that the other
// replicas may serve it; it did not when it is one this replica adopts.
func (h *Hub) recordSession(ctx context.Context, _ any, req *mcp.InitializeRequest, res *mcp.InitializeResult) {
	id := sessionID(ctx)
	if id == "" || sessionbook.IsAdoption(ctx) || !strings.HasPrefix(id, sessionbook.HTTPPrefix) {
		return
	}
	params := req.Params
	params.ProtocolVersion = res.ProtocolVersion // replayed, it negotiates the same
	init, err := json.Marshal(params)
	ctx, cancel := context.WithTimeout(ctx, h.StoreWait)
	defer cancel()
	if err == nil {
		err = h.Sessions.PutSession(ctx, id, mcpgateway.UserFrom(ctx),
			SharedSession{ProtocolVersion: res.ProtocolVersion, Init: init}, h.SessionIdleTTL)
	}
	if err != nil {
		h.Logger.Warn("recording an MCP session for the other replicas: it is served on this one only", logKeyErr, err)
		return
	}
	h.Book.Touched(id)
}

// recordLevel records the log level a client set in the SessionStore
// (mcp-go's after-setLevel hook), for the replicas that adopt the session.
func (h *Hub) recordLevel(ctx context.Context, _ any, req *mcp.SetLevelRequest, _ *mcp.EmptyResult) {
	id := sessionID(ctx)
	if id == "" || sessionbook.IsAdoption(ctx) || !strings.HasPrefix(id, sessionbook.HTTPPrefix) {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, h.StoreWait)
	defer cancel()
	if err := h.Sessions.TouchSession(ctx, id, mcpgateway.UserFrom(ctx), string(req.Params.Level), h.SessionIdleTTL); err != nil {
		h.Logger.Warn("recording an MCP session's log level for the other replicas", logKeyErr, err)
	}
}

// SyncLevel gives the session of the call in ctx the log level its client
// last set, which the SessionStore holds when the replicas share sessions:
// the client may have set it through another replica, just before this
// call. It reads the store once per call that logs (mcpendpoint's
// clientEmitter), within ListTimeout; on failure the level stays as it is
// here.
func (h *Hub) SyncLevel(ctx context.Context) {
	if h.Sessions == nil {
		return
	}
	sl, ok := mcpserver.ClientSessionFromContext(ctx).(mcpserver.SessionWithLogging)
	id := sessionID(ctx)
	if !ok || !strings.HasPrefix(id, sessionbook.HTTPPrefix) {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, h.ListTimeout)
	defer cancel()
	s, err := h.Sessions.Session(ctx, id, mcpgateway.UserFrom(ctx), h.SessionIdleTTL)
	if err != nil {
		if !errors.Is(err, ErrUnknownSession) {
			h.Logger.Warn("reading an MCP session's log level", logKeyErr, err)
		}
		return
	}
	if s.LogLevel != "" && mcp.LoggingLevel(s.LogLevel) != sl.GetLogLevel() {
		sl.SetLogLevel(mcp.LoggingLevel(s.LogLevel))
	}
}

// endShared removes session id of user from the SessionStore, within
// StoreWait, and tells the other replicas, before a DELETE of it is
// served here. An error other than an unknown session is returned: the
// session is not ended.
func (h *Hub) endShared(ctx context.Context, id, user string) error {
	dctx, cancel := context.WithTimeout(ctx, h.StoreWait)
	defer cancel()
	if err := h.Sessions.DeleteSession(dctx, id, user); err != nil && !errors.Is(err, ErrUnknownSession) {
		return err
	}
	if h.Relay == nil {
		return nil
	}
	if err := h.publish(Message{Kind: relayEnded, Session: idHash(id)}); err != nil {
		// The others find it gone within touchEvery.
		h.Logger.Warn("telling the other replicas an MCP session ended", logKeyErr, err)
	}
	return nil
}

// receiveEnded ends here a session another replica ended (relayEnded).
func (h *Hub) receiveEnded(m *Message) {
	if id := h.Book.ByHash(m.Session); id != "" {
		h.endHere(context.Background(), id)
	}
}

// EndEverywhere removes session id of user from the SessionStore and tells
// the other replicas, before a DELETE of it is served here. When it
// cannot, it answers w (503) and returns false: the session is not ended.
func (h *Hub) EndEverywhere(ctx context.Context, w http.ResponseWriter, id, user string) bool {
	if err := h.endShared(ctx, id, user); err != nil {
		h.Logger.Warn("ending an MCP session on every replica", logKeyErr, err)
		writeUnavailable(w, storeRetryAfter, "the MCP session could not be ended on every replica: try again")
		return false
	}
	return true
}
