package web

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"github.com/coder/websocket"
	"github.com/gin-gonic/gin"

	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/tree"
)

// RouteSet adds routes to a Server: the hook through which a package on
// top of web (web/elysiaapi, the routes of Weaviate Elysia's frontend)
// serves its routes with web's one set of auth and body helpers and its one
// error mapper, so that every route authenticates, limits bodies and maps
// errors to statuses the same way. New calls each RouteSet of
// Options.Routes once, with a Kit valid for the Server's life.
//
// A Kit, and so a RouteSet, is for web's own sub-packages: it hands out gin
// types, which stay inside web (STYLE.md §2).
type RouteSet func(k *Kit)

// Kit is what a RouteSet gets from the Server: its router, its auth,
// body and error helpers and the services the routes share. It is safe for
// concurrent use by the handlers it registers.
type Kit struct {
	s *Server
	e *gin.Engine
}

// Handle registers handlers for method and path on the Server's router,
// after web's middleware (request id, metrics, access log, recovery, the
// browser guard). Put RequireKey or RequireUser first.
func (k *Kit) Handle(method, path string, handlers ...gin.HandlerFunc) {
	k.e.Handle(method, path, handlers...)
}

// RequireKey is middleware for routes any valid API key may use: without
// one the request is answered 401.
func (k *Kit) RequireKey(c *gin.Context) { k.s.requireKey(c) }

// RequireUser is middleware for routes under :user_id: the key must act for
// that user (401 without a key, 403 for another user), and the path's ids
// must be valid.
func (k *Kit) RequireUser(c *gin.Context) { k.s.requireUser(c) }

// AuthorizeUser checks that the request's key may act for userID; when it
// may not it has answered (401 or 403) and returns false.
func (k *Kit) AuthorizeUser(c *gin.Context, userID string) bool { return k.s.authorizeUser(c, userID) }

// MayActFor reports whether the key that passed RequireKey or RequireUser
// may act for userID. With no keys configured, every request may.
func (k *Kit) MayActFor(c *gin.Context, userID string) bool {
	return mayActFor(Principal(c.Request.Context()), userID)
}

// Authenticate finds the user the request's API key acts for (AdminUser
// for an admin key, and for every request without keys) and records it
// (Principal); false means no valid key, and nothing was answered: for a
// route that answers a 401 its own way.
func (k *Kit) Authenticate(c *gin.Context) (principal string, ok bool) {
	principal, ok = k.s.authenticate(c)
	if ok {
		setPrincipal(c, principal)
	}
	return principal, ok
}

// Forbidden is the 403 error for a key that may not act for userID.
func (k *Kit) Forbidden(userID string) error { return forbidden(userID) }

// Fail answers a JSON request with err mapped to its status and public
// message, followed by extra (the route's body with its fields empty).
// Errors from BadRequest, Error and the body helpers keep their status;
// the tree's and the tools' sentinels map as on every route.
func (k *Kit) Fail(c *gin.Context, err error, extra tools.Object) { k.s.fail(c, err, extra) }

// FailServer is Fail for errors of an MCP server or its authorization
// server (see Servers): an unclassified one is 502 with its own text, and
// an error that says when the server may be tried again sets Retry-After.
func (k *Kit) FailServer(c *gin.Context, err error, extra tools.Object) {
	k.s.failServer(c, err, extra)
}

// WriteJSON answers with status and body, without HTML escaping.
func (k *Kit) WriteJSON(c *gin.Context, status int, body tools.Object) { writeJSON(c, status, body) }

// Decode reads the request body (bounded by Options.MaxBodyBytes) and
// decodes it into dst, refusing unknown shapes and trailing data; an empty
// body is allowed when optional, and each of required must be present.
// Its errors are 400 or 413, for Fail.
func (k *Kit) Decode(c *gin.Context, dst any, optional bool, required ...string) error {
	return k.s.decode(c, dst, optional, required...)
}

// ReadBody reads the request body, bounded by Options.MaxBodyBytes (413).
func (k *Kit) ReadBody(c *gin.Context) ([]byte, error) {
	return readBody(c.Writer, c.Request, k.s.maxBody)
}

// CheckIDs checks name, id pairs as the path's ids are checked (400 naming
// the field when one is empty, too long or not printable).
func (k *Kit) CheckIDs(pairs ...string) error { return checkIDs(pairs...) }

// AcceptWS completes a WebSocket handshake; when it fails it has answered
// and returns false. The caller owns the conn, bounds its reads with
// MaxBody and its writes with WriteTimeout, and should TrackSocket it.
func (k *Kit) AcceptWS(c *gin.Context) (*websocket.Conn, bool) { return k.s.acceptWS(c) }

// TrackSocket makes Drain close conn with "going away"; call untrack when
// the socket ends.
func (k *Kit) TrackSocket(conn *websocket.Conn) (untrack func()) {
	return k.s.drain.trackSocket(closeOnDrain(conn))
}

// OwnOrigin is the scheme://host of this service under the name r
// reached it by, when the service owns that name (a loopback one, or one
// of Options.PublicHosts); else the error says how to make it own it.
func (k *Kit) OwnOrigin(r *http.Request) (string, error) { return k.s.guard.OwnOrigin(r) }

// Watch registers fn to be told of each Change made through the
// Server's routes: after every successful state-changing request, and for
// each Changed. fn is called on the request's goroutine and must not
// block. Call it only while the RouteSet runs.
func (k *Kit) Watch(fn func(Change)) { k.s.watchers = append(k.s.watchers, fn) }

// Changed tells the watchers of a change the request's method and status
// do not show (a sign-in finished on a GET).
func (k *Kit) Changed(ch Change) { k.s.changed(ch) }

// TrackRun makes Drain call cancel, which must end a running query, once
// the service shuts down (at once when it already is); call untrack when
// the run ends.
func (k *Kit) TrackRun(cancel func()) (untrack func()) { return k.s.drain.trackRun(cancel) }

// TrackStream is TrackSocket for a socket that closes itself: Drain calls
// goAway, which asks the socket to close with status 1001 once its work
// has sent its last events, and closeNow when the socket has not closed
// by the end of Drain's ctx. Both must be safe to call from any
// goroutine, at any time.
func (k *Kit) TrackStream(goAway, closeNow func()) (untrack func()) {
	return k.s.drain.trackSocket(socketCloser{goAway: goAway, now: closeNow})
}

// Heartbeat is Options.Heartbeat, defaulted.
func (k *Kit) Heartbeat() time.Duration { return k.s.heartbeat }

// DecodeJSON decodes data, a JSON object (a WebSocket message), into dst as
// Decode does a body; its errors are 400s for Fail.
func (k *Kit) DecodeJSON(data []byte, dst any, optional bool, required ...string) error {
	return decodeJSON(data, dst, optional, required...)
}

// ServersFor is the servers' status as GET /api/servers shows it to user
// ("" or AdminUser: the shared status).
func (k *Kit) ServersFor(ctx context.Context, user string) (ServersStatus, error) {
	return k.s.serversFor(ctx, user)
}

// TreeJSON is the tree of a user's conversation as GET
// /tree/:user_id/:conversation_id?create=false shows it: a conversation
// that does not exist is not created, and has the tree it would be
// created with.
func (k *Kit) TreeJSON(ctx context.Context, userID, convID string) (json.RawMessage, error) {
	t, _, err := k.s.previewJSON(ctx, userID, convID)
	return t, err
}

// MaxBody is Options.MaxBodyBytes, defaulted.
func (k *Kit) MaxBody() int64 { return k.s.maxBody }

// WriteTimeout is Options.StreamWriteTimeout, defaulted.
func (k *Kit) WriteTimeout() time.Duration { return k.s.writeTimeout }

// Logger is the Server's logger: its records carry the request id.
func (k *Kit) Logger() *slog.Logger { return k.s.logger }

// Trees is Deps.Trees.
func (k *Kit) Trees() *tree.Manager { return k.s.deps.Trees }

// Configs is Deps.Configs, nil when there is none.
func (k *Kit) Configs() ConfigStore { return k.s.deps.Configs }

// Feedback is Deps.Feedback, nil when there is none.
func (k *Kit) Feedback() FeedbackStore { return k.s.deps.Feedback }

// TextModel is Deps.Model, nil when there is none.
func (k *Kit) TextModel() TextModel { return k.s.deps.Model }

// Model is Options.Model.
func (k *Kit) Model() ModelInfo { return k.s.model }

// UserConfig returns the config the user's queries use: the saved default,
// else the built-in one (BuiltinConfig).
func (k *Kit) UserConfig(ctx context.Context, userID string) (tree.SavedProfile, error) {
	return k.s.userConfig(ctx, userID)
}

// ConfigJSON is sp in Elysia's Config.to_json shape, as POST /init/user
// shows it.
func (k *Kit) ConfigJSON(sp tree.SavedProfile) tools.Object { return k.s.elysiaConfig(sp) }

// ModelSettings is Elysia's Settings.to_json for this service, under
// settings id.
func (k *Kit) ModelSettings(id string) tools.Object { return k.s.modelSettings(id) }

// FrontendConfig is Elysia's FrontendConfig.to_json, as POST /init/user
// shows it.
func (k *Kit) FrontendConfig() tools.Object { return frontendConfig() }

// Conversation is one of a user's conversations, as GET
// /conversations/:user_id lists it.
type Conversation = conversationEntry

// Conversations returns a user's conversations, most recent first; never
// nil.
func (k *Kit) Conversations(ctx context.Context, userID string) ([]Conversation, error) {
	return k.s.conversationList(ctx, userID)
}

// SavedHistory returns an existing conversation's history and saved event
// log (empty without a Store). A missing one matches tree.ErrNotFound.
func (k *Kit) SavedHistory(ctx context.Context, userID, convID string) ([]tree.Message, []json.RawMessage, error) {
	got, err := k.s.savedConversation(ctx, userID, convID)
	if err != nil {
		return nil, nil, err
	}
	return got.History, got.Events, nil
}

// Error is an error web answers with status and msg, shown as is: for a
// problem the route itself finds in a request.
func Error(status int, msg string) error { return &requestError{status, msg} }

// BadRequest is Error(400, msg).
func BadRequest(msg string) error { return badRequest(msg) }

// StatusOf is the status Fail answers err with.
func StatusOf(err error) int { return statusOf(err) }

// OK is the body of a successful JSON answer: "error": "" and then fields.
func OK(fields ...tools.Member) tools.Object { return ok(fields...) }

// EmptyObject and EmptyList are {} and [] in a body.
var (
	EmptyObject = emptyObject
	EmptyList   = emptyList
)
