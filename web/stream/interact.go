package stream

import (
	"context"
	"errors"
	"net/http"
	"sync"

	"github.com/gin-gonic/gin"

	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/tree"
	"github.com/elysia-go/elysia/web"
)

// runningQueries holds the cancel funcs of the queries running on this
// server, so that a user can stop one (the UI's Stop button, a stop
// WebSocket message, POST /query/:u/:c/stop). The zero value is ready; it is
// safe for concurrent use.
type runningQueries struct {
	// mu guards byKey.
	mu    sync.Mutex
	byKey map[queryKey]func()
}

type queryKey struct{ user, conv, query string }

// track registers a running query; the returned func unregisters it.
func (rq *runningQueries) track(k queryKey, cancel func()) (untrack func()) {
	rq.mu.Lock()
	defer rq.mu.Unlock()
	if rq.byKey == nil {
		rq.byKey = map[queryKey]func(){}
	}
	rq.byKey[k] = cancel
	return func() {
		rq.mu.Lock()
		defer rq.mu.Unlock()
		delete(rq.byKey, k)
	}
}

// stop cancels the user's running queries that match: in conv (any
// conversation when ""), with id query (any when ""). It returns how many.
func (rq *runningQueries) stop(user, conv, query string) int {
	rq.mu.Lock()
	defer rq.mu.Unlock()
	n := 0
	for k, cancel := range rq.byKey {
		if k.user == user && (conv == "" || k.conv == conv) && (query == "" || k.query == query) {
			cancel()
			n++
		}
	}
	return n
}

// stopBody is the optional body of POST /query/:user_id/:conversation_id/stop.
type stopBody struct {
	QueryID string `json:"query_id"`
}

// stopQuery serves POST /query/:user_id/:conversation_id/stop: the
// conversation's running query (the one named by query_id, or all) is
// cancelled; the servers of its tool calls get notifications/cancelled and
// the conversation is free at once.
func (s *Streams) stopQuery(c *gin.Context) {
	var body stopBody
	if err := s.k.Decode(c, &body, true); err != nil {
		s.k.Fail(c, err, object{kv("stopped", 0)})
		return
	}
	n := s.stopQueries(c.Request.Context(), c.Param("user_id"), c.Param("conversation_id"), body.QueryID)
	if n == 0 {
		s.k.Fail(c, web.Error(http.StatusNotFound, "no query of this conversation is running"), object{kv("stopped", 0)})
		return
	}
	s.k.WriteJSON(c, http.StatusOK, web.OK(kv("stopped", n)))
}

// elicitationBody is the body of POST /elicitations/:elicitation_id.
type elicitationBody struct {
	Action  string         `json:"action"`
	Content map[string]any `json:"content"`
	// UserID, optional, names the user the question is for when the key
	// is an admin's (or there are no keys): the unguessable id alone names
	// the question there, and a UserID that is not its user's is a 404. A
	// user's key answers for its user.
	UserID string `json:"user_id"`
}

// answerElicitation serves POST /elicitations/:elicitation_id: the answer
// to a server's question (an elicitation event) from the user who got it.
// Anyone else gets 404, as for a question that does not exist; an answer the
// form refuses gets 422 and the question keeps waiting.
func (s *Streams) answerElicitation(c *gin.Context) {
	var body elicitationBody
	if err := s.k.Decode(c, &body, false, "action"); err != nil {
		s.k.Fail(c, err, nil)
		return
	}
	user := web.Principal(c.Request.Context())
	if user == "" { // requireKey always names one
		s.k.Fail(c, web.ErrUnauthorized, nil)
		return
	}
	if user == web.AdminUser {
		// "" asks tree for the question whatever its user.
		user = body.UserID
		if err := s.k.CheckIDs("user_id", user); err != nil {
			s.k.Fail(c, err, nil)
			return
		}
	}
	ans := tools.Answer{Action: body.Action, Content: body.Content}
	if err := s.answer(c.Request.Context(), user, c.Param("elicitation_id"), ans); err != nil {
		s.k.Fail(c, err, nil)
		return
	}
	s.k.WriteJSON(c, http.StatusOK, web.OK(kv("elicitation_id", c.Param("elicitation_id"))))
}

// wsControl is a WebSocket message that is not a query: {"type": "stop",
// "query_id"} or {"type": "elicitation_response", "elicitation_id",
// "action", "content"}.
type wsControl struct {
	Type           string         `json:"type"`
	UserID         string         `json:"user_id"`
	ConversationID string         `json:"conversation_id"`
	QueryID        string         `json:"query_id"`
	ElicitationID  string         `json:"elicitation_id"`
	Action         string         `json:"action"`
	Content        map[string]any `json:"content"`
}

// control handles a control message of the socket; the user is the
// message's user_id, checked against the socket's key like a query's.
func (ws *wsSession) control(ctx context.Context, m wsControl) {
	fail := func(text string) { ws.send(ctx, errorEnvelope(text, m.UserID, m.ConversationID, m.QueryID)) }
	if err := ws.s.k.CheckIDs("user_id", m.UserID, "conversation_id", m.ConversationID, "query_id", m.QueryID); err != nil || m.UserID == "" {
		fail("a " + m.Type + " message needs a valid user_id")
		return
	}
	if !ws.mayActFor(m.UserID) {
		fail(ws.s.k.Forbidden(m.UserID).Error())
		return
	}
	// The work held by another replica is asked for on a goroutine of the
	// socket, which reads on meanwhile.
	switch m.Type {
	case "stop":
		switch {
		case ws.s.stopHere(m.UserID, m.ConversationID, m.QueryID) > 0:
		case ws.s.relay == nil:
			fail("no such query is running")
		default:
			ws.wg.Go(func() {
				if ws.s.stopElsewhere(ctx, m.UserID, m.ConversationID, m.QueryID) == 0 {
					fail("no such query is running")
				}
			})
		}
	case "elicitation_response":
		ans := tools.Answer{Action: m.Action, Content: m.Content}
		err := ws.s.k.Trees().Answer(ctx, m.UserID, m.ElicitationID, ans)
		if ws.s.relay == nil || !errors.Is(err, tree.ErrNotFound) {
			ws.answered(ctx, m, err)
			return
		}
		ws.wg.Go(func() { ws.answered(ctx, m, ws.s.answerElsewhere(ctx, m.UserID, m.ElicitationID, ans, err)) })
	default:
		fail(`unknown message type "` + m.Type + `": want a query, "stop" or "elicitation_response"`)
	}
}

// answered tells the socket's client when its answer to a server's
// question was refused (err not nil): the refusal names the question, so
// the page marks the right form; the question keeps waiting for a better
// answer.
func (ws *wsSession) answered(ctx context.Context, m wsControl, err error) {
	if err == nil {
		return
	}
	env, _ := tools.NewEnvelope(tools.Event{Type: tools.EventError, Payload: map[string]any{
		"text": publicText(ctx, err), "elicitation_id": m.ElicitationID}}, m.UserID, m.ConversationID, m.QueryID)
	ws.send(ctx, env)
}
