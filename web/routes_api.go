package web

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// emptyList is sent for a nil list.
var emptyList = []struct{}{}

// listConversations serves GET /conversations/:user_id.
func (s *Server) listConversations(c *gin.Context) {
	list, err := s.deps.Conversations.List(c.Request.Context(), c.Param("user_id"))
	if err != nil {
		s.fail(c, err, object{kv("conversations", emptyList)})
		return
	}
	if list == nil {
		list = emptyList
	}
	writeJSON(c, http.StatusOK, ok(kv("conversations", list)))
}

// getConversation serves GET /conversations/:user_id/:conversation_id.
func (s *Server) getConversation(c *gin.Context) {
	conv := c.Param("conversation_id")
	got, err := s.deps.Conversations.Get(c.Request.Context(), c.Param("user_id"), conv)
	if err != nil {
		s.fail(c, err, object{kv("conversation_id", conv), kv("conversation", nil)})
		return
	}
	writeJSON(c, http.StatusOK, ok(kv("conversation_id", conv), kv("conversation", got)))
}

// deleteConversation serves DELETE /conversations/:user_id/:conversation_id.
func (s *Server) deleteConversation(c *gin.Context) {
	conv := c.Param("conversation_id")
	if err := s.deps.Conversations.Delete(c.Request.Context(), c.Param("user_id"), conv); err != nil {
		s.fail(c, err, object{kv("conversation_id", conv)})
		return
	}
	writeJSON(c, http.StatusOK, ok(kv("conversation_id", conv)))
}

// listServers serves GET /api/servers.
func (s *Server) listServers(c *gin.Context) {
	st, err := s.deps.Servers.Servers(c.Request.Context())
	if err != nil {
		s.fail(c, err, object{kv("servers", emptyList)})
		return
	}
	servers := st.Servers
	if servers == nil {
		servers = emptyList
	}
	writeJSON(c, http.StatusOK, ok(kv("config_file", st.ConfigFile), kv("config_error", st.ConfigError), kv("servers", servers)))
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

// serverExecute serves POST /api/servers/:name/execute, the gateway's
// execute action.
func (s *Server) serverExecute(c *gin.Context) {
	var body executeBody
	if err := s.decode(c, &body, false, "tool_name"); err != nil {
		s.fail(c, err, object{kv("result", nil)})
		return
	}
	if body.ToolInputs == nil {
		body.ToolInputs = map[string]any{}
	}
	res, err := s.deps.Servers.Execute(c.Request.Context(), c.Param("name"), body.ToolName, body.ToolInputs)
	if err != nil {
		s.failServer(c, err, object{kv("result", nil)})
		return
	}
	writeJSON(c, http.StatusOK, ok(kv("result", res)))
}
