package web

import (
	"encoding/json"

	"github.com/gin-gonic/gin"
)

// The routes_elysia*.go files serve what Weaviate Elysia's frontend (v0.2.5)
// calls beside the chat and tree routes, in the shapes of Elysia's
// elysia/api/routes (DESIGN.md, "Elysia frontend routes"): the user and
// tree configs (routes_elysia_config.go), the saved conversations
// (routes_elysia_db.go), the collections, none here
// (routes_elysia_collections.go), the follow-up suggestions and titles
// (routes_elysia_util.go, suggest.go), and feedback
// (routes_elysia_feedback.go). Statuses follow this service's rule (a
// fitting code with "error"), where Elysia often answers 200.

// elysiaRoutes registers the routes of Elysia's frontend.
func (s *Server) elysiaRoutes(e *gin.Engine) {
	e.GET("/user/config/models", s.requireKey, s.configModels)
	e.GET("/user/config/:user_id", s.requireUser, s.userConfigGet)
	e.GET("/user/config/:user_id/list", s.requireUser, s.userConfigList)
	e.GET("/user/config/:user_id/:config_id/load", s.requireUser, s.userConfigGet)
	e.POST("/user/config/:user_id/:config_id/load", s.requireUser, s.userConfigLoad)
	e.POST("/user/config/:user_id/new", s.requireUser, s.userConfigNew)
	e.POST("/user/config/:user_id/:config_id", s.requireUser, s.userConfigSave)
	e.DELETE("/user/config/:user_id/:config_id", s.requireUser, s.userConfigDelete)
	e.PATCH("/user/config/frontend_config/:user_id", s.requireUser, s.userConfigFrontend)

	// GET /tree/config/:user_id/:conversation_id shares its first segments
	// with GET /tree/:user_id/:conversation_id: a static "config" there
	// would take /tree/config/<conversation> from a user named "config", so
	// it is found under the tree route's params instead.
	e.GET("/tree/:user_id/:conversation_id/*rest", s.treeConfigGet)
	e.POST("/tree/config/:user_id/:conversation_id", s.requireUser, s.treeConfigPost)
	e.POST("/tree/config/:user_id/:conversation_id/new", s.requireUser, s.treeConfigPost)

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
