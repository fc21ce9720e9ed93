package elysiaapi

import (
	"encoding/json"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/tree"
	"github.com/elysia-go/elysia/web"
	"github.com/elysia-go/elysia/web/stream"
)

// savedTrees serves GET /db/:user_id/saved_trees: the user's conversations
// keyed by id, each {"title", "last_update_time"}.
func (s *routes) savedTrees(c *gin.Context) {
	c.Header("Cache-Control", "no-cache")
	list, err := s.k.Conversations(c.Request.Context(), c.Param("user_id"))
	if err != nil {
		s.fail(c, err, object{kv("trees", web.EmptyObject)})
		return
	}
	trees := make(object, len(list))
	for i, e := range list {
		trees[i] = kv(e.ConversationID, object{kv("title", e.Title), kv("last_update_time", e.UpdatedAt)})
	}
	s.writeJSON(c, http.StatusOK, ok(kv("trees", trees)))
}

// loadTree serves GET /db/:user_id/load_tree/:conversation_id: the saved
// event log as Elysia's "rebuild", each query's events after a user_prompt
// message carrying its prompt, which the frontend replays.
func (s *routes) loadTree(c *gin.Context) {
	c.Header("Cache-Control", "no-cache")
	user, conv := c.Param("user_id"), c.Param("conversation_id")
	history, events, err := s.k.SavedHistory(c.Request.Context(), user, conv)
	if err != nil {
		s.fail(c, err, object{kv("rebuild", web.EmptyList)})
		return
	}
	s.writeJSON(c, http.StatusOK, ok(kv("rebuild", rebuild(user, conv, history, events))))
}

// rebuild interleaves a conversation's prompts (the user messages of its
// history, in order) with its event log: a user_prompt message opens each
// query's events. Events that do not decode are left out, and results go
// in the frontend's form (stream.ElysiaFrontendForm), as they went live.
func rebuild(user, conv string, history []tree.Message, events []json.RawMessage) []any {
	var prompts []string
	for _, m := range history {
		if m.Role == "user" {
			prompts = append(prompts, m.Content)
		}
	}
	out := make([]any, 0, len(events)+len(prompts))
	seen := map[string]bool{}
	for _, raw := range events {
		var head struct {
			Type    tools.EventType `json:"type"`
			QueryID string          `json:"query_id"`
		}
		if json.Unmarshal(raw, &head) != nil {
			continue
		}
		if !seen[head.QueryID] {
			seen[head.QueryID] = true
			prompt := ""
			if n := len(seen) - 1; n < len(prompts) {
				prompt = prompts[n]
			}
			out = append(out, tools.Envelope{Type: "user_prompt", ID: "use-" + head.QueryID, UserID: user,
				ConversationID: conv, QueryID: head.QueryID, Payload: mustJSON(object{kv("prompt", prompt)})})
		}
		if head.Type == tools.EventResult {
			raw = stream.ElysiaFrontendFormJSON(raw)
		}
		out = append(out, raw)
	}
	return out
}

// deleteTree serves DELETE /db/:user_id/delete_tree/:conversation_id.
func (s *routes) deleteTree(c *gin.Context) {
	if err := s.k.Trees().Delete(c.Request.Context(), c.Param("user_id"), c.Param("conversation_id")); err != nil {
		s.fail(c, err, nil)
		return
	}
	s.writeJSON(c, http.StatusOK, ok())
}
