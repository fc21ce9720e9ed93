package elysiaapi

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/elysia-go/elysia/tree"
)

// conversationBody is the body of the /util routes.
type conversationBody struct {
	UserID         string `json:"user_id"`
	ConversationID string `json:"conversation_id"`
	Text           string `json:"text"`
}

// followUpSuggestions serves POST /util/follow_up_suggestions: questions the
// user could ask next, from the model when one is wired (Deps.Model), else
// built deterministically from the conversation's last query and results
// and the tools of its tree (see suggestions).
func (s *routes) followUpSuggestions(c *gin.Context) {
	var body conversationBody
	extra := object{kv("suggestions", []string{})}
	if !s.bodyUser(c, &body, func() string { return body.UserID }, extra, "user_id", "conversation_id") {
		return
	}
	cv, found, err := s.k.Trees().Existing(c.Request.Context(), body.UserID, body.ConversationID)
	if err == nil && !found {
		err = fmt.Errorf("conversation %q of user %q: %w", body.ConversationID, body.UserID, tree.ErrNotFound)
	}
	if err != nil {
		s.fail(c, err, extra)
		return
	}
	s.writeJSON(c, http.StatusOK, ok(kv("suggestions", s.suggestions(c.Request.Context(), cv.Tree(), cv.State()))))
}

// title serves POST /util/title: the conversation's title (made from its
// first query), or one made from "text" for a conversation without one.
func (s *routes) title(c *gin.Context) {
	var body conversationBody
	extra := object{kv("title", "")}
	if !s.bodyUser(c, &body, func() string { return body.UserID }, extra, "user_id", "conversation_id") {
		return
	}
	cv, found, err := s.k.Trees().Existing(c.Request.Context(), body.UserID, body.ConversationID)
	if err != nil {
		s.fail(c, err, extra)
		return
	}
	title := ""
	if found {
		title = cv.State().Title
	}
	if title == "" {
		title = clip(strings.Join(strings.Fields(body.Text), " "), 60)
	}
	s.writeJSON(c, http.StatusOK, ok(kv("title", title)))
}
