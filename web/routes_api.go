package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/elysia-go/elysia/internal/jsonscan"
	"github.com/elysia-go/elysia/tree"
)

// emptyList is sent for a nil list.
var emptyList = []struct{}{}

// listConversations serves GET /conversations/:user_id.
func (s *Server) listConversations(c *gin.Context) {
	list, err := s.conversationList(c.Request.Context(), c.Param("user_id"))
	if err != nil {
		s.fail(c, err, object{kv("conversations", emptyList)})
		return
	}
	writeJSON(c, http.StatusOK, ok(kv("conversations", list)))
}

// conversationList returns a user's conversations, most recent first: the
// "conversations" of GET /conversations/:user_id. It is never nil.
func (s *Server) conversationList(ctx context.Context, userID string) ([]conversationEntry, error) {
	list, err := s.deps.Trees.Conversations(ctx, userID)
	if err != nil {
		return nil, err
	}
	out := make([]conversationEntry, len(list))
	for i, ci := range list {
		out[i] = conversationEntry{ConversationID: ci.ConversationID, Title: ci.Title, UpdatedAt: wireTime(ci.UpdatedAt)}
	}
	return out, nil
}

// getConversation serves GET /conversations/:user_id/:conversation_id: the
// conversation's history, tree and event log, to reopen it.
func (s *Server) getConversation(c *gin.Context) {
	conv := c.Param("conversation_id")
	got, err := s.savedConversation(c.Request.Context(), c.Param("user_id"), conv)
	if err != nil {
		s.fail(c, err, object{kv("conversation_id", conv), kv("conversation", nil)})
		return
	}
	writeJSON(c, http.StatusOK, ok(kv("conversation_id", conv), kv("conversation", got)))
}

// savedConversation reads an existing conversation, with its event log
// when a Store is set. A missing one is an error matching tree.ErrNotFound.
func (s *Server) savedConversation(ctx context.Context, userID, convID string) (*savedConversation, error) {
	cv, found, err := s.deps.Trees.Reopen(ctx, userID, convID)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("conversation %q of user %q: %w", convID, userID, tree.ErrNotFound)
	}
	st := cv.State()
	out := &savedConversation{
		ConversationID: convID, Title: st.Title, InitMode: string(st.InitMode),
		History: nonNil(st.History), UpdatedAt: wireTime(st.UpdatedAt), Environment: st.Environment,
		Events: []json.RawMessage{}, Queries: []map[string]string{},
	}
	if out.Tree, err = cv.Tree().MarshalJSON(); err != nil {
		return nil, err
	}
	if s.deps.Store != nil {
		if out.Events, err = s.deps.Store.Events(ctx, userID, convID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// deleteConversation serves DELETE /conversations/:user_id/:conversation_id.
func (s *Server) deleteConversation(c *gin.Context) {
	conv := c.Param("conversation_id")
	if err := s.deps.Trees.Delete(c.Request.Context(), c.Param("user_id"), conv); err != nil {
		s.fail(c, err, object{kv("conversation_id", conv)})
		return
	}
	writeJSON(c, http.StatusOK, ok(kv("conversation_id", conv)))
}

// listServers serves GET /api/servers, as the asking user sees them
// (askingUser).
func (s *Server) listServers(c *gin.Context) {
	user, err := askingUser(c)
	if err != nil {
		s.fail(c, err, object{kv("servers", emptyList)})
		return
	}
	st, err := s.serversFor(c.Request.Context(), user)
	if err != nil {
		s.fail(c, err, object{kv("servers", emptyList)})
		return
	}
	writeJSON(c, http.StatusOK, ok(kv("config_file", st.ConfigFile), kv("config_error", st.ConfigError), kv("servers", nonNil(st.Servers))))
}

// serverList serves POST /api/servers/:name/list, the gateway's list
// action, one page at a time. The body {"query", "cursor"} is optional.
func (s *Server) serverList(c *gin.Context) {
	var body ListRequest
	if err := s.decode(c, &body, true); err != nil {
		s.fail(c, err, object{kv("result", nil)})
		return
	}
	res, err := s.deps.Servers.List(c.Request.Context(), c.Param("name"), body)
	if err != nil {
		s.failServer(c, err, object{kv("result", nil)})
		return
	}
	writeJSON(c, http.StatusOK, ok(kv("result", res)))
}

// executeBody is the body of POST /api/servers/:name/execute.
type executeBody struct {
	ToolName   string         `json:"tool_name"`
	ToolInputs map[string]any `json:"tool_inputs"`
}

// decodeFast decodes the body every execute sends,
// {"tool_name": "...", "tool_inputs": {...} or null}, other members
// ignored, in one pass (internal/jsonscan) to what decodeJSON makes of it:
// numbers as json.Number. Anything else, or unusual (a member named twice
// or in another case, escapes in the name, an empty name, inputs that are
// not an object), is left to decodeJSON's general way.
func (b *executeBody) decodeFast(body []byte) bool {
	if !json.Valid(body) || body[jsonscan.SkipSpace(body, 0)] != '{' {
		return false
	}
	var name []byte
	var inputs map[string]any
	var seen uint8
	for key, val := range jsonscan.Members(body) {
		switch string(key) {
		case "tool_name":
			s, ok := jsonscan.Plain(val)
			if !ok || len(s) == 0 || seen&1 != 0 {
				return false
			}
			seen |= 1
			name = s
		case "tool_inputs":
			if seen&2 != 0 {
				return false
			}
			seen |= 2
			switch val[0] {
			case '{':
				inputs = jsonscan.Value(val).(map[string]any)
			case 'n':
			default:
				return false
			}
		default:
			if jsonscan.MayName(key, "tool_name", "tool_inputs") {
				return false
			}
		}
	}
	if name == nil {
		return false
	}
	b.ToolName, b.ToolInputs = string(name), inputs
	return true
}

// serverExecute serves POST /api/servers/:name/execute, the gateway's
// execute action: a JSON answer, or an event stream with an interactive
// user when the request's Accept asks for one (executeSSE).
func (s *Server) serverExecute(c *gin.Context) {
	var body executeBody
	if err := s.decode(c, &body, false, "tool_name"); err != nil {
		s.fail(c, err, object{kv("result", nil)})
		return
	}
	if body.ToolInputs == nil {
		body.ToolInputs = map[string]any{}
	}
	if srv, has := s.deps.Servers.(InteractiveServers); has && wantsEventStream(c.Request) {
		s.executeSSE(c, srv, body)
		return
	}
	res, err := s.deps.Servers.Execute(c.Request.Context(), c.Param("name"), body.ToolName, body.ToolInputs)
	if err != nil {
		s.failServer(c, err, object{kv("result", nil)})
		return
	}
	writeJSON(c, http.StatusOK, ok(kv("result", res)))
}

// serversFor is the servers' status as user sees it, when Servers can
// tell (UserServers) and user is one user; else the shared status.
func (s *Server) serversFor(ctx context.Context, user string) (ServersStatus, error) {
	if us, ok := s.deps.Servers.(UserServers); ok && user != "" && user != AdminUser {
		return us.ServersFor(ctx, user)
	}
	return s.deps.Servers.Servers(ctx)
}

// askingUser is the user /api/servers shows the status for: the key's
// user, or for an admin key (and without keys) the one ?user= names ("" for
// none). A user key asking for another user is refused (403).
func askingUser(c *gin.Context) (string, error) {
	p := Principal(c.Request.Context())
	q := c.Query("user")
	if p != AdminUser {
		if q != "" && q != p {
			return "", forbidden(q)
		}
		return p, nil
	}
	if q != "" {
		if err := checkID("user", q); err != nil {
			return "", err
		}
	}
	return q, nil
}
