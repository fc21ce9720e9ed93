package web

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/tree"
)

// emptyObject is sent for "tree" and "config" when a request fails, as
// Elysia does.
var emptyObject = struct{}{}

// getTree serves GET /tree/:user_id/:conversation_id: the web UI page for a
// browser, the conversation's tree as JSON otherwise. With ?create=false a
// conversation that does not exist is not created: the answer is the tree
// it would be created with, and "exists" says whether it does (the web UI
// asks so: a conversation is created by its first query, not by a page
// that was only opened).
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
	if c.Query("create") == "false" {
		t, exists, err := s.previewJSON(c.Request.Context(), user, conv)
		if err != nil {
			s.fail(c, err, object{kv("conversation_id", conv), kv("exists", false), kv("tree", emptyObject)})
			return
		}
		writeTreeExists(c, conv, &exists, t)
		return
	}
	t, err := s.treeJSON(c.Request.Context(), user, conv)
	if err != nil {
		s.fail(c, err, object{kv("conversation_id", conv), kv("tree", emptyObject)})
		return
	}
	writeTree(c, conv, t)
}

// treeJSON returns the tree JSON of a conversation, creating the
// conversation with the default tree when it does not exist: the "tree" of
// GET /tree/:user_id/:conversation_id.
func (s *Server) treeJSON(ctx context.Context, userID, convID string) (json.RawMessage, error) {
	cv, err := s.deps.Trees.Conversation(ctx, userID, convID)
	if err != nil {
		return nil, err
	}
	// MarshalJSON directly: json.Marshal would validate and compact the
	// already valid output again.
	return cv.Tree().MarshalJSON()
}

// previewJSON is treeJSON without creating the conversation: the tree of
// one that does not exist is the tree it would be created with; exists
// says whether it does.
func (s *Server) previewJSON(ctx context.Context, userID, convID string) (_ json.RawMessage, exists bool, err error) {
	t, exists, err := s.deps.Trees.Preview(ctx, userID, convID)
	if err != nil {
		return nil, false, err
	}
	b, err := t.MarshalJSON()
	return b, exists, err
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
	mode, err := tree.ParseInitMode(body.BranchInitialisation)
	if err != nil {
		s.fail(c, err, extra)
		return
	}
	if body.BranchInitialisation == "" {
		// The mode of the user's config, as Elysia's /init/tree takes it.
		sp, err := s.userConfig(c.Request.Context(), c.Param("user_id"))
		if err != nil {
			s.fail(c, err, extra)
			return
		}
		if sp.Profile.InitMode != "" {
			mode = sp.Profile.InitMode
		}
	}
	cv, err := s.deps.Trees.InitConversation(c.Request.Context(), c.Param("user_id"), conv, mode)
	if err != nil {
		s.fail(c, err, extra)
		return
	}
	s.writeTreeOf(c, conv, cv.Tree(), extra)
}

// initUser serves POST /init/user/:user_id.
func (s *Server) initUser(c *gin.Context) {
	existed := false
	if s.deps.Store != nil {
		var err error
		if existed, err = s.deps.Store.EnsureUser(c.Request.Context(), c.Param("user_id")); err != nil {
			s.fail(c, err, object{kv("user_exists", false), kv("config", emptyObject), kv("frontend_config", emptyObject),
				kv("correct_settings", emptyObject)})
			return
		}
	}
	sp, err := s.userConfig(c.Request.Context(), c.Param("user_id"))
	if err != nil {
		s.fail(c, err, object{kv("user_exists", existed), kv("config", emptyObject), kv("frontend_config", emptyObject),
			kv("correct_settings", emptyObject)})
		return
	}
	writeJSON(c, http.StatusOK, ok(kv("user_exists", existed), kv("config", s.elysiaConfig(sp)),
		kv("frontend_config", frontendConfig()), kv("correct_settings", s.correctSettings()),
		kv("settings_not_needed", notNeededSettings)))
}

// availableTools serves GET /tools/available: every tool that can be added
// to a tree, keyed by name, in the Manager's order (the built-ins, then the
// gateways as configured), which a map would lose.
func (s *Server) availableTools(c *gin.Context) {
	c.Header("Cache-Control", "no-cache")
	infos := s.deps.Trees.AvailableTools()
	list := make(object, len(infos))
	for i, ti := range infos {
		list[i] = kv(ti.Name, ti)
	}
	writeJSON(c, http.StatusOK, ok(kv("tools", list)))
}

// treeOpBody is the body of POST /tools/:user_id/<kind>, in Elysia's field
// names.
//
// As in Elysia, an operation without a conversation id applies to every
// conversation of the user and to the user's default for conversations
// created later; with conversation_id set it applies to that conversation
// only (creating it first if needed).
type treeOpBody struct {
	ConversationID string   `json:"conversation_id"`
	ToolName       string   `json:"tool_name"`
	BranchID       string   `json:"branch_id"`
	FromToolIDs    []string `json:"from_tool_ids"`
	// ID is the id of the branch to add or remove; branch_id is taken
	// when it is empty.
	ID           string `json:"id"`
	Instruction  string `json:"instruction"`
	Description  string `json:"description"`
	Root         bool   `json:"root"`
	FromBranchID string `json:"from_branch_id"`
	Status       string `json:"status"`
}

// treeOpKinds maps the last element of /tools/:user_id/<kind> to the tree
// operation, in registration order.
var treeOpKinds = []struct {
	path string
	kind tree.OpKind
}{
	{"add", tree.OpAddTool},
	{"remove", tree.OpRemoveTool},
	{"add_branch", tree.OpAddBranch},
	{"remove_branch", tree.OpRemoveBranch},
}

// treeOp serves POST /tools/:user_id/<kind>.
func (s *Server) treeOp(kind tree.OpKind) gin.HandlerFunc {
	branchOp := kind == tree.OpAddBranch || kind == tree.OpRemoveBranch
	return func(c *gin.Context) {
		extra := object{kv("tree", emptyObject)}
		var body treeOpBody
		var required []string
		if !branchOp {
			required = []string{"tool_name"}
		}
		if err := s.decode(c, &body, false, required...); err != nil {
			s.fail(c, err, extra)
			return
		}
		if err := checkIDs("conversation_id", body.ConversationID); err != nil {
			s.fail(c, err, extra)
			return
		}
		op := tree.Op{
			Kind: kind, ToolName: body.ToolName, BranchID: body.BranchID, FromToolIDs: body.FromToolIDs,
			Root: body.Root, Description: body.Description, Instruction: body.Instruction,
			FromBranchID: body.FromBranchID, Status: body.Status,
		}
		if branchOp {
			if body.ID != "" {
				op.BranchID = body.ID
			}
			if op.BranchID == "" {
				s.fail(c, badRequest(`missing field "id" (the branch id)`), extra)
				return
			}
		}
		ctx, user := c.Request.Context(), c.Param("user_id")
		var t *tree.Tree
		var err error
		if body.ConversationID == "" {
			t, err = s.deps.Trees.ApplyUser(ctx, user, op)
		} else {
			t, err = s.deps.Trees.Apply(ctx, user, body.ConversationID, op)
		}
		if err != nil {
			s.fail(c, err, extra)
			return
		}
		s.writeTreeOf(c, "", t, extra)
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

// writeTreeOf answers 200 with t's JSON (see writeTree), or fails with
// extra when it does not marshal.
func (s *Server) writeTreeOf(c *gin.Context, conv string, t *tree.Tree, extra object) {
	b, err := t.MarshalJSON()
	if err != nil {
		s.fail(c, err, extra)
		return
	}
	writeTree(c, conv, b)
}

// writeTree answers 200 with {"conversation_id", "error", "tree"} (without
// conversation_id when conv is ""). The tree JSON comes ready (and often
// shared) from Trees, so it is written as it is: gin's c.JSON would
// validate and re-indent it again, which was most of the cost of GET /tree,
// and copying it into one buffer would cost an allocation of its size.
func writeTree(c *gin.Context, conv string, tree json.RawMessage) {
	writeTreeExists(c, conv, nil, tree)
}

// writeTreeExists is writeTree with "exists" when exists is not nil.
func writeTreeExists(c *gin.Context, conv string, exists *bool, tree json.RawMessage) {
	head := make([]byte, 0, len(conv)+64)
	head = append(head, '{')
	if conv != "" {
		id, _ := tools.Marshal(conv) // a string always marshals
		head = append(head, `"conversation_id":`...)
		head = append(head, id...)
		head = append(head, ',')
	}
	if exists != nil {
		head = strconv.AppendBool(append(head, `"exists":`...), *exists)
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
