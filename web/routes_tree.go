package web

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/elysia-go/elysia/tools"
)

// emptyObject is sent for "tree" and "config" when a request fails, as
// Elysia does.
var emptyObject = struct{}{}

// getTree serves GET /tree/:user_id/:conversation_id: the web UI page for a
// browser, the conversation's tree as JSON otherwise.
func (s *Server) getTree(c *gin.Context) {
	c.Header("Vary", "Accept")
	if s.assets != nil && prefersHTML(c.GetHeader("Accept")) {
		s.servePage(c)
		return
	}
	user, conv := c.Param("user_id"), c.Param("conversation_id")
	if !s.authorizeUser(c, user) || !s.validPathIDs(c) {
		return
	}
	tree, err := s.deps.Trees.TreeJSON(c.Request.Context(), user, conv)
	if err != nil {
		s.fail(c, err, object{kv("conversation_id", conv), kv("tree", emptyObject)})
		return
	}
	writeTree(c, conv, tree)
}

// initTreeBody is the body of POST /init/tree; low_memory is accepted and
// ignored (DESIGN.md).
type initTreeBody struct {
	LowMemory            bool   `json:"low_memory"`
	BranchInitialisation string `json:"branch_initialisation"`
}

// initTree serves POST /init/tree/:user_id/:conversation_id.
func (s *Server) initTree(c *gin.Context) {
	conv := c.Param("conversation_id")
	extra := object{kv("conversation_id", conv), kv("tree", emptyObject)}
	var body initTreeBody
	if err := s.decode(c, &body, true); err != nil {
		s.fail(c, err, extra)
		return
	}
	tree, err := s.deps.Trees.InitTree(c.Request.Context(), c.Param("user_id"), conv, body.BranchInitialisation)
	if err != nil {
		s.fail(c, err, extra)
		return
	}
	writeTree(c, conv, tree)
}

// initUser serves POST /init/user/:user_id.
func (s *Server) initUser(c *gin.Context) {
	existed, config, err := s.deps.Users.InitUser(c.Request.Context(), c.Param("user_id"))
	if err != nil {
		s.fail(c, err, object{kv("user_exists", false), kv("config", emptyObject)})
		return
	}
	if config == nil {
		config = emptyObject
	}
	writeJSON(c, http.StatusOK, ok(kv("user_exists", existed), kv("config", config)))
}

// availableTools serves GET /tools/available.
func (s *Server) availableTools(c *gin.Context) {
	c.Header("Cache-Control", "no-cache")
	list, err := s.deps.Catalog.AvailableTools(c.Request.Context())
	if err != nil {
		s.fail(c, err, object{kv("tools", emptyObject)})
		return
	}
	if list == nil {
		list = emptyObject
	}
	writeJSON(c, http.StatusOK, ok(kv("tools", list)))
}

// treeOp serves POST /tools/:user_id/<kind>.
func (s *Server) treeOp(kind TreeOpKind) gin.HandlerFunc {
	return func(c *gin.Context) {
		extra := object{kv("tree", emptyObject)}
		var op TreeOp
		var required []string
		switch kind {
		case OpAddTool, OpRemoveTool:
			required = []string{"tool_name"}
		}
		if err := s.decode(c, &op, false, required...); err != nil {
			s.fail(c, err, extra)
			return
		}
		if err := checkIDs("conversation_id", op.ConversationID); err != nil {
			s.fail(c, err, extra)
			return
		}
		op.Kind = kind
		if kind == OpAddBranch || kind == OpRemoveBranch {
			if op.ID == "" {
				op.ID = op.BranchID
			}
			if op.ID == "" {
				s.fail(c, badRequest(`missing field "id" (the branch id)`), extra)
				return
			}
		}
		tree, err := s.deps.Trees.ApplyOp(c.Request.Context(), c.Param("user_id"), op)
		if err != nil {
			s.fail(c, err, extra)
			return
		}
		writeTree(c, "", tree)
	}
}

// decode reads the request body (at most the configured limit) and decodes
// it into dst; see decodeJSON.
func (s *Server) decode(c *gin.Context, dst any, optional bool, required ...string) error {
	body, err := readBody(c.Writer, c.Request, s.maxBody)
	if err != nil {
		return err
	}
	return decodeJSON(body, dst, optional, required...)
}

// writeTree answers 200 with {"conversation_id", "error", "tree"} (without
// conversation_id when conv is ""). The tree JSON comes ready (and often
// shared) from Trees, so it is written as it is: gin's c.JSON would
// validate and re-indent it again, which was most of the cost of GET /tree,
// and copying it into one buffer would cost an allocation of its size.
func writeTree(c *gin.Context, conv string, tree json.RawMessage) {
	head := make([]byte, 0, len(conv)+48)
	head = append(head, '{')
	if conv != "" {
		id, _ := tools.Marshal(conv) // a string always marshals
		head = append(head, `"conversation_id":`...)
		head = append(head, id...)
		head = append(head, ',')
	}
	head = append(head, `"error":"","tree":`...)
	w := c.Writer
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(head)+len(tree)+1))
	w.WriteHeader(http.StatusOK)
	for _, part := range [][]byte{head, tree, {'}'}} {
		if _, err := w.Write(part); err != nil {
			return // the client went away
		}
	}
}
