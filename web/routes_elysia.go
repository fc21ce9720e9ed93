package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/coder/websocket"
	"github.com/gin-gonic/gin"

	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/tree"
)

// This file serves what Weaviate Elysia's frontend (v0.2.5) calls beside the
// chat and tree routes, in the shapes of Elysia's elysia/api/routes (DESIGN.md,
// "Elysia frontend routes"): the user and tree configs, the saved
// conversations, the collections (none here), the follow-up suggestions and
// titles, and feedback. Statuses follow this service's rule (a fitting code
// with "error"), where Elysia often answers 200.

// defaultConfigID is the id of the one config a user has: the service's
// settings, which come from the environment and mcp.json.
const defaultConfigID = "default"

// notNeededSettings are Elysia's settings (Settings.check) that configure
// Weaviate, which an MCP backend does not use. POST /init/user lists them
// under "settings_not_needed" and leaves them out of "correct_settings", so
// that the frontend neither claims they are set nor asks for them.
var notNeededSettings = []string{"wcd_url", "wcd_api_key", "weaviate_is_local", "local_weaviate_port", "local_weaviate_grpc_port"}

// configWarning says why a config cannot be saved, created or deleted here.
const configWarning = "Elysia-Go takes its model from the environment (ELYSIA_LLM, ELYSIA_MODEL, the provider keys) and its tools from mcp.json; settings changed here are not saved."

// noCollections is the error of the routes about one collection.
const noCollections = "this service has no collections: its data comes from MCP servers, through their tools"

// FeedbackStore keeps users' ratings of answers. persist satisfies it.
// Safe for concurrent use.
type FeedbackStore interface {
	// AddFeedback records a rating (0 negative, 1 positive, 2
	// superpositive) of a query's answer, replacing an earlier one.
	AddFeedback(ctx context.Context, userID, conversationID, queryID string, rating int) error
	// RemoveFeedback deletes a query's rating; a missing one is an error
	// matching tree.ErrNotFound.
	RemoveFeedback(ctx context.Context, userID, conversationID, queryID string) error
	// EachFeedback calls fn with every rating the user gave and when,
	// oldest first.
	EachFeedback(ctx context.Context, userID string, fn func(rating int, at time.Time)) error
}

// elysiaRoutes registers the routes of Elysia's frontend.
func (s *Server) elysiaRoutes(e *gin.Engine) {
	e.GET("/user/config/models", s.requireKey, s.configModels)
	e.GET("/user/config/:user_id", s.requireUser, s.userConfigGet)
	e.GET("/user/config/:user_id/list", s.requireUser, s.userConfigList)
	e.GET("/user/config/:user_id/:config_id/load", s.requireUser, s.userConfigGet)
	e.POST("/user/config/:user_id/:config_id/load", s.requireUser, s.userConfigGet)
	e.POST("/user/config/:user_id/new", s.requireUser, s.userConfigUnsaved)
	e.POST("/user/config/:user_id/:config_id", s.requireUser, s.userConfigUnsaved)
	e.DELETE("/user/config/:user_id/:config_id", s.requireUser, s.userConfigDelete)
	e.PATCH("/user/config/frontend_config/:user_id", s.requireUser, s.userConfigUnsaved)

	// GET /tree/config/:user_id/:conversation_id shares its first segments
	// with GET /tree/:user_id/:conversation_id: a static "config" there
	// would take /tree/config/<conversation> from a user named "config", so
	// it is found under the tree route's params instead.
	e.GET("/tree/:user_id/:conversation_id/*rest", s.treeConfigGet)
	e.POST("/tree/config/:user_id/:conversation_id", s.requireUser, s.treeConfig)
	e.POST("/tree/config/:user_id/:conversation_id/new", s.requireUser, s.treeConfig)

	e.GET("/db/:user_id/saved_trees", s.requireUser, s.savedTrees)
	e.GET("/db/:user_id/load_tree/:conversation_id", s.requireUser, s.loadTree)
	e.DELETE("/db/:user_id/delete_tree/:conversation_id", s.requireUser, s.deleteTree)

	e.GET("/collections/mapping_types", s.requireKey, s.mappingTypes)
	e.GET("/collections/:user_id/list", s.requireUser, s.collectionsList)
	e.DELETE("/collections/:user_id/metadata/delete/all", s.requireUser, s.collectionsDeleteAll)
	e.GET("/collections/:user_id/metadata/:collection_name", s.requireUser, s.noCollection(kv("metadata", emptyObject)))
	e.PATCH("/collections/:user_id/metadata/:collection_name", s.requireUser, s.noCollection())
	e.DELETE("/collections/:user_id/metadata/:collection_name", s.requireUser, s.noCollection())
	e.POST("/collections/:user_id/view/:collection_name", s.requireUser,
		s.noCollection(kv("properties", emptyObject), kv("items", emptyList)))
	e.GET("/collections/:user_id/get_object/:collection_name/:uuid", s.requireUser,
		s.noCollection(kv("properties", emptyObject), kv("items", emptyList)))
	e.GET("/ws/process_collection", s.requireKey, s.processCollectionWS)

	e.POST("/util/follow_up_suggestions", s.requireKey, s.followUpSuggestions)
	e.POST("/util/title", s.requireKey, s.title)

	e.POST("/feedback/add", s.requireKey, s.feedbackAdd)
	e.POST("/feedback/remove", s.requireKey, s.feedbackRemove)
	e.GET("/feedback/metadata/:user_id", s.requireUser, s.feedbackMetadata)
}

// elysiaConfig is the user's config in Elysia's Config.to_json shape, with
// the service's model and tree settings, plus "model" and "config_file".
func (s *Server) elysiaConfig() object {
	m := s.model
	var base any
	if m.BaseURL != "" {
		base = m.BaseURL
	}
	settings := object{
		kv("API_KEYS", emptyObject),
		kv("BASE_MODEL", m.Model), kv("BASE_PROVIDER", m.Provider),
		kv("COMPLEX_MODEL", m.Model), kv("COMPLEX_PROVIDER", m.Provider),
		kv("MODEL_API_BASE", base),
		kv("LOGGING_LEVEL", "INFO"), kv("LOGGING_LEVEL_INT", 20),
		kv("SETTINGS_ID", defaultConfigID), kv("USE_FEEDBACK", s.deps.Feedback != nil),
		kv("WCD_URL", ""), kv("WCD_API_KEY", ""), kv("WEAVIATE_IS_LOCAL", false),
		kv("LOCAL_WEAVIATE_PORT", 8080), kv("LOCAL_WEAVIATE_GRPC_PORT", 50051),
	}
	return object{
		kv("id", defaultConfigID),
		kv("name", "Elysia-Go"),
		kv("settings", settings),
		kv("style", "Informative, polite and friendly."),
		kv("agent_description", "You choose and call the tools of the configured MCP servers to satisfy the user's query, then answer concisely."),
		kv("end_goal", "You have satisfied the user's query, or exhausted the tools available, or asked the user for clarification."),
		kv("branch_initialisation", string(tree.OneBranch)),
		kv("use_elysia_collections", false),
		kv("model", s.model),
		kv("config_file", s.configFile),
	}
}

// frontendConfig is Elysia's FrontendConfig.to_json: nothing is saved to
// Weaviate here (conversations go to this service's database).
func frontendConfig() object {
	return object{
		kv("save_trees_to_weaviate", false), kv("save_configs_to_weaviate", false),
		kv("save_location_wcd_url", ""), kv("save_location_wcd_api_key", ""),
		kv("save_location_weaviate_is_local", false),
		kv("save_location_local_weaviate_port", 8080), kv("save_location_local_weaviate_grpc_port", 50051),
		kv("client_timeout", 3), kv("tree_timeout", 10),
	}
}

// correctSettings is Settings.check for the settings that apply here: the
// model, which is set when a provider is configured (the offline planner
// counts: it decides without one).
func (s *Server) correctSettings() object {
	set := s.model.Provider != "" && s.model.Model != ""
	return object{kv("base_model", set), kv("base_provider", set), kv("complex_model", set), kv("complex_provider", set)}
}

// configModels serves GET /user/config/models: the one model this service
// is configured with, in Elysia's {provider: {model: info}} shape.
func (s *Server) configModels(c *gin.Context) {
	models := object{}
	if s.model.Provider != "" {
		models = object{kv(s.model.Provider, object{kv(s.model.Model, object{
			kv("name", s.model.Model), kv("api_keys", []string{}), kv("speed", "medium"), kv("accuracy", "medium"),
		})})}
	}
	writeJSON(c, http.StatusOK, ok(kv("models", models)))
}

// userConfigGet serves GET /user/config/:user_id and loading the one
// config (GET or POST /user/config/:user_id/:config_id/load).
func (s *Server) userConfigGet(c *gin.Context) {
	if id := c.Param("config_id"); id != "" && id != defaultConfigID {
		s.fail(c, &requestError{http.StatusNotFound, "no config " + quote(id) + ": the only config is " + quote(defaultConfigID)},
			object{kv("config", emptyObject), kv("frontend_config", emptyObject), kv("warnings", []string{})})
		return
	}
	writeJSON(c, http.StatusOK, ok(kv("config", s.elysiaConfig()), kv("frontend_config", frontendConfig()), kv("warnings", []string{})))
}

// userConfigList serves GET /user/config/:user_id/list.
func (s *Server) userConfigList(c *gin.Context) {
	list := []object{{kv("config_id", defaultConfigID), kv("name", "Elysia-Go"), kv("last_update_time", ""), kv("default", true)}}
	writeJSON(c, http.StatusOK, ok(kv("configs", list), kv("warnings", []string{})))
}

// userConfigUnsaved serves the routes that would change a config (save,
// new, the frontend config): the settings are the service's own, so
// nothing changes, and the answer says so in "warnings".
func (s *Server) userConfigUnsaved(c *gin.Context) {
	if _, err := readBody(c.Writer, c.Request, s.maxBody); err != nil {
		s.fail(c, err, nil)
		return
	}
	writeJSON(c, http.StatusOK, ok(kv("config", s.elysiaConfig()), kv("frontend_config", frontendConfig()), kv("warnings", []string{configWarning})))
}

// userConfigDelete serves DELETE /user/config/:user_id/:config_id.
func (s *Server) userConfigDelete(c *gin.Context) {
	if c.Param("config_id") != defaultConfigID {
		s.fail(c, &requestError{http.StatusNotFound, "no config " + quote(c.Param("config_id"))}, nil)
		return
	}
	s.fail(c, &requestError{http.StatusUnprocessableEntity, "the default config cannot be deleted: " + configWarning}, nil)
}

// treeConfig serves /tree/config/:user_id/:conversation_id (get, save,
// new): a conversation's config is the user's.
func (s *Server) treeConfig(c *gin.Context) {
	if c.Request.Method == http.MethodPost {
		if _, err := readBody(c.Writer, c.Request, s.maxBody); err != nil {
			s.fail(c, err, object{kv("config", emptyObject)})
			return
		}
	}
	writeJSON(c, http.StatusOK, ok(kv("config", s.elysiaConfig())))
}

// treeConfigGet serves GET /tree/config/:user_id/:conversation_id, which
// gin routes as /tree/:user_id/:conversation_id/*rest with user_id
// "config".
func (s *Server) treeConfigGet(c *gin.Context) {
	user, conv := c.Param("conversation_id"), strings.TrimPrefix(c.Param("rest"), "/")
	if c.Param("user_id") != "config" || conv == "" || strings.Contains(conv, "/") {
		s.fail(c, &requestError{http.StatusNotFound, "no route for " + c.Request.Method + " " + c.Request.URL.Path}, nil)
		return
	}
	if !s.authorizeUser(c, user) {
		return
	}
	if err := checkIDs("user_id", user, "conversation_id", conv); err != nil {
		s.fail(c, err, object{kv("config", emptyObject)})
		return
	}
	s.treeConfig(c)
}

// savedTrees serves GET /db/:user_id/saved_trees: the user's conversations
// keyed by id, each {"title", "last_update_time"}.
func (s *Server) savedTrees(c *gin.Context) {
	c.Header("Cache-Control", "no-cache")
	list, err := s.conversationList(c.Request.Context(), c.Param("user_id"))
	if err != nil {
		s.fail(c, err, object{kv("trees", emptyObject)})
		return
	}
	trees := make(object, len(list))
	for i, e := range list {
		trees[i] = kv(e.ConversationID, object{kv("title", e.Title), kv("last_update_time", e.UpdatedAt)})
	}
	writeJSON(c, http.StatusOK, ok(kv("trees", trees)))
}

// loadTree serves GET /db/:user_id/load_tree/:conversation_id: the saved
// event log as Elysia's "rebuild", each query's events after a user_prompt
// message carrying its prompt, which the frontend replays.
func (s *Server) loadTree(c *gin.Context) {
	c.Header("Cache-Control", "no-cache")
	user, conv := c.Param("user_id"), c.Param("conversation_id")
	got, err := s.savedConversation(c.Request.Context(), user, conv)
	if err != nil {
		s.fail(c, err, object{kv("rebuild", emptyList)})
		return
	}
	writeJSON(c, http.StatusOK, ok(kv("rebuild", rebuild(user, conv, got.History, got.Events))))
}

// rebuild interleaves a conversation's prompts (the user messages of its
// history, in order) with its event log: a user_prompt message opens each
// query's events. Events that do not decode are left out.
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
			QueryID string `json:"query_id"`
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
		out = append(out, raw)
	}
	return out
}

// deleteTree serves DELETE /db/:user_id/delete_tree/:conversation_id.
func (s *Server) deleteTree(c *gin.Context) {
	if err := s.deps.Trees.Delete(c.Request.Context(), c.Param("user_id"), c.Param("conversation_id")); err != nil {
		s.fail(c, err, nil)
		return
	}
	writeJSON(c, http.StatusOK, ok())
}

func (s *Server) mappingTypes(c *gin.Context) {
	writeJSON(c, http.StatusOK, ok(kv("mapping_types", emptyList)))
}

func (s *Server) collectionsList(c *gin.Context) {
	writeJSON(c, http.StatusOK, ok(kv("collections", emptyList)))
}

func (s *Server) collectionsDeleteAll(c *gin.Context) {
	writeJSON(c, http.StatusOK, ok())
}

// noCollection answers a route about one collection: there are none, which
// is said in "error" with 200, not 404, so the frontend does not treat the
// route as missing.
func (s *Server) noCollection(extra ...field) gin.HandlerFunc {
	return func(c *gin.Context) {
		if c.Request.ContentLength != 0 {
			if _, err := readBody(c.Writer, c.Request, s.maxBody); err != nil {
				s.fail(c, err, extra)
				return
			}
		}
		writeJSON(c, http.StatusOK, append(object{kv("error", "collection "+quote(c.Param("collection_name"))+": "+noCollections)}, extra...))
	}
}

// bodyUser decodes a JSON body holding "user_id" (and the fields of dst)
// and checks that the key may act for that user; it answers the request
// itself and returns false when not.
func (s *Server) bodyUser(c *gin.Context, dst any, userID func() string, extra object, required ...string) bool {
	if err := s.decode(c, dst, false, required...); err != nil {
		s.fail(c, err, extra)
		return false
	}
	u := userID()
	if err := checkIDs("user_id", u); err != nil {
		s.fail(c, err, extra)
		return false
	}
	if !mayActFor(c.GetString(principalKey), u) {
		s.fail(c, forbidden(u), extra)
		return false
	}
	return true
}

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
func (s *Server) followUpSuggestions(c *gin.Context) {
	var body conversationBody
	extra := object{kv("suggestions", []string{})}
	if !s.bodyUser(c, &body, func() string { return body.UserID }, extra, "user_id", "conversation_id") {
		return
	}
	cv, found, err := s.deps.Trees.Existing(c.Request.Context(), body.UserID, body.ConversationID)
	if err == nil && !found {
		err = fmt.Errorf("conversation %q of user %q: %w", body.ConversationID, body.UserID, tree.ErrNotFound)
	}
	if err != nil {
		s.fail(c, err, extra)
		return
	}
	writeJSON(c, http.StatusOK, ok(kv("suggestions", s.suggestions(c.Request.Context(), cv.Tree(), cv.State()))))
}

// title serves POST /util/title: the conversation's title (made from its
// first query), or one made from "text" for a conversation without one.
func (s *Server) title(c *gin.Context) {
	var body conversationBody
	extra := object{kv("title", "")}
	if !s.bodyUser(c, &body, func() string { return body.UserID }, extra, "user_id", "conversation_id") {
		return
	}
	cv, found, err := s.deps.Trees.Existing(c.Request.Context(), body.UserID, body.ConversationID)
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
	writeJSON(c, http.StatusOK, ok(kv("title", title)))
}

// feedbackBody is the body of POST /feedback/add and /feedback/remove.
type feedbackBody struct {
	UserID         string `json:"user_id"`
	ConversationID string `json:"conversation_id"`
	QueryID        string `json:"query_id"`
	Feedback       *int   `json:"feedback"`
}

// errNoFeedbackStore is the answer of the feedback routes without a
// database.
var errNoFeedbackStore = &requestError{http.StatusServiceUnavailable, "feedback needs the database; the service runs without one"}

func (s *Server) feedbackAdd(c *gin.Context) {
	var body feedbackBody
	if !s.bodyUser(c, &body, func() string { return body.UserID }, nil, "user_id", "conversation_id", "query_id", "feedback") {
		return
	}
	if err := checkIDs("conversation_id", body.ConversationID, "query_id", body.QueryID); err != nil {
		s.fail(c, err, nil)
		return
	}
	if *body.Feedback < 0 || *body.Feedback > 2 {
		s.fail(c, badRequest("feedback must be 0 (negative), 1 (positive) or 2 (superpositive)"), nil)
		return
	}
	if s.deps.Feedback == nil {
		s.fail(c, errNoFeedbackStore, nil)
		return
	}
	if err := s.deps.Feedback.AddFeedback(c.Request.Context(), body.UserID, body.ConversationID, body.QueryID, *body.Feedback); err != nil {
		s.fail(c, err, nil)
		return
	}
	writeJSON(c, http.StatusOK, ok())
}

func (s *Server) feedbackRemove(c *gin.Context) {
	var body feedbackBody
	if !s.bodyUser(c, &body, func() string { return body.UserID }, nil, "user_id", "conversation_id", "query_id") {
		return
	}
	if err := checkIDs("conversation_id", body.ConversationID, "query_id", body.QueryID); err != nil {
		s.fail(c, err, nil)
		return
	}
	if s.deps.Feedback == nil {
		s.fail(c, errNoFeedbackStore, nil)
		return
	}
	if err := s.deps.Feedback.RemoveFeedback(c.Request.Context(), body.UserID, body.ConversationID, body.QueryID); err != nil {
		s.fail(c, err, nil)
		return
	}
	writeJSON(c, http.StatusOK, ok())
}

// feedbackNames are Elysia's names of the ratings 0, 1 and 2.
var feedbackNames = [3]string{"negative", "positive", "superpositive"}

// feedbackMetadata serves GET /feedback/metadata/:user_id: the user's
// ratings counted in all and per day, as Elysia's feedback_metadata.
func (s *Server) feedbackMetadata(c *gin.Context) {
	byValue := map[string]int{"negative": 0, "positive": 0, "superpositive": 0}
	type day struct {
		counts [3]int
		sum    int
	}
	days := map[string]*day{}
	total := 0
	if s.deps.Feedback != nil {
		err := s.deps.Feedback.EachFeedback(c.Request.Context(), c.Param("user_id"), func(rating int, at time.Time) {
			if rating < 0 || rating > 2 {
				return
			}
			total++
			byValue[feedbackNames[rating]]++
			k := at.UTC().Format(time.DateOnly)
			d := days[k]
			if d == nil {
				d = &day{}
				days[k] = d
			}
			d.counts[rating]++
			d.sum += rating
		})
		if err != nil {
			s.fail(c, err, object{kv("total_feedback", 0), kv("feedback_by_value", byValue), kv("feedback_by_date", emptyObject)})
			return
		}
	}
	keys := make([]string, 0, len(days))
	for k := range days {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	byDate := make(object, len(keys))
	for i, k := range keys {
		d := days[k]
		n := d.counts[0] + d.counts[1] + d.counts[2]
		byDate[i] = kv(k, object{kv("negative", d.counts[0]), kv("positive", d.counts[1]), kv("superpositive", d.counts[2]),
			kv("mean", float64(d.sum)/float64(n)), kv("count", n)})
	}
	writeJSON(c, http.StatusOK, ok(kv("total_feedback", total),
		kv("feedback_by_value", object{kv("negative", byValue["negative"]), kv("positive", byValue["positive"]), kv("superpositive", byValue["superpositive"])}),
		kv("feedback_by_date", byDate)))
}

// quote returns s in double quotes, as %q would.
func quote(s string) string {
	b, _ := json.Marshal(s) // a string always marshals
	return string(b)
}

// mustJSON marshals v, which must marshal.
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic("web: " + err.Error())
	}
	return b
}

// processCollectionWS serves WebSocket /ws/process_collection: Elysia's
// frontend asks it to analyse a Weaviate collection. There are none here,
// so each message gets an error message in the socket's shape ({"type":
// "error", "collection_name", "progress", "message", "error"}), which ends
// the frontend's wait for that collection, and the socket stays open so
// the frontend does not reconnect in a loop.
func (s *Server) processCollectionWS(c *gin.Context) {
	principal := c.GetString(principalKey)
	opts := &websocket.AcceptOptions{InsecureSkipVerify: true} // browserGuard checked Origin
	if _, proto := wsProtocolKey(c.Request); proto != "" {
		opts.Subprotocols = []string{proto}
	}
	hw := &handshakeWriter{ResponseWriter: c.Writer}
	conn, err := websocket.Accept(hw, c.Request, opts)
	if err != nil {
		if hw.status == 0 {
			s.logger.WarnContext(c.Request.Context(), "websocket handshake failed", slog.Any("err", err))
			return
		}
		c.Writer.Header().Del("Content-Type")
		s.failStatus(c, hw.status, errors.New(strings.TrimSpace(hw.body.String())), nil)
		return
	}
	defer func() { _ = conn.CloseNow() }()
	conn.SetReadLimit(s.maxBody)
	ctx := c.Request.Context()
	for {
		_, data, err := conn.Read(ctx)
		if err != nil {
			return // the client closed, or the message was over the limit
		}
		var m struct {
			UserID         string `json:"user_id"`
			CollectionName string `json:"collection_name"`
		}
		msg := "collections are not processed here: " + noCollections
		if err := json.Unmarshal(data, &m); err != nil {
			msg = "invalid JSON message: " + err.Error()
		} else if !mayActFor(principal, m.UserID) {
			msg = forbidden(m.UserID).Error()
		}
		reply := mustJSON(object{kv("type", "error"), kv("user_id", m.UserID), kv("collection_name", m.CollectionName),
			kv("progress", 0), kv("message", msg), kv("error", msg)})
		wctx, cancel := context.WithTimeout(ctx, s.writeTimeout)
		err = conn.Write(wctx, websocket.MessageText, reply)
		cancel()
		if err != nil {
			return
		}
	}
}
