// Package elysiaapi serves what Weaviate Elysia's frontend (v0.2.5) calls
// beside the chat and tree routes, in the shapes of Elysia's
// elysia/api/routes (DESIGN.md, "Elysia frontend routes"): the user and
// tree configs (config.go), the saved conversations (db.go), the
// collections, none here (collections.go), the follow-up suggestions and
// titles (util.go, suggest.go), and feedback (feedback.go). Statuses
// follow this service's rule (a fitting code with "error"), where Elysia
// often answers 200.
//
// It sits on top of package web: Routes is a web.RouteSet, and every
// route uses web's auth, body helpers and error mapper through the
// web.Kit, so that these routes answer errors as web's own do:
//
//	srv := web.New(deps, &web.Options{Routes: []web.RouteSet{elysiaapi.Routes}})
package elysiaapi

import (
	"encoding/json"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/web"
)

// routes holds the Kit the handlers answer through.
type routes struct {
	k *web.Kit
}

// Routes registers the routes of Elysia's frontend on a web.Server; pass
// it in web.Options.Routes. Their stores (configs, feedback) and model
// come from web.Deps.
func Routes(k *web.Kit) {
	s := &routes{k: k}
	k.Handle(http.MethodGet, "/user/config/models", k.RequireKey, s.configModels)
	k.Handle(http.MethodGet, "/user/config/:user_id", k.RequireUser, s.userConfigGet)
	k.Handle(http.MethodGet, "/user/config/:user_id/list", k.RequireUser, s.userConfigList)
	k.Handle(http.MethodGet, "/user/config/:user_id/:config_id/load", k.RequireUser, s.userConfigGet)
	k.Handle(http.MethodPost, "/user/config/:user_id/:config_id/load", k.RequireUser, s.userConfigLoad)
	k.Handle(http.MethodPost, "/user/config/:user_id/new", k.RequireUser, s.userConfigNew)
	k.Handle(http.MethodPost, "/user/config/:user_id/:config_id", k.RequireUser, s.userConfigSave)
	k.Handle(http.MethodDelete, "/user/config/:user_id/:config_id", k.RequireUser, s.userConfigDelete)
	k.Handle(http.MethodPatch, "/user/config/frontend_config/:user_id", k.RequireUser, s.userConfigFrontend)

	// GET /tree/config/:user_id/:conversation_id shares its first segments
	// with GET /tree/:user_id/:conversation_id: a static "config" there
	// would take /tree/config/<conversation> from a user named "config", so
	// it is found under the tree route's params instead.
	k.Handle(http.MethodGet, "/tree/:user_id/:conversation_id/*rest", s.treeConfigGet)
	k.Handle(http.MethodPost, "/tree/config/:user_id/:conversation_id", k.RequireUser, s.treeConfigPost)
	k.Handle(http.MethodPost, "/tree/config/:user_id/:conversation_id/new", k.RequireUser, s.treeConfigPost)

	k.Handle(http.MethodGet, "/db/:user_id/saved_trees", k.RequireUser, s.savedTrees)
	k.Handle(http.MethodGet, "/db/:user_id/load_tree/:conversation_id", k.RequireUser, s.loadTree)
	k.Handle(http.MethodDelete, "/db/:user_id/delete_tree/:conversation_id", k.RequireUser, s.deleteTree)

	k.Handle(http.MethodGet, "/collections/mapping_types", k.RequireKey, s.mappingTypes)
	k.Handle(http.MethodGet, "/collections/:user_id/list", k.RequireUser, s.collectionsList)
	k.Handle(http.MethodDelete, "/collections/:user_id/metadata/delete/all", k.RequireUser, s.collectionsDeleteAll)
	k.Handle(http.MethodGet, "/collections/:user_id/metadata/:collection_name", k.RequireUser, s.noCollection(kv("metadata", web.EmptyObject)))
	k.Handle(http.MethodPatch, "/collections/:user_id/metadata/:collection_name", k.RequireUser, s.noCollection())
	k.Handle(http.MethodDelete, "/collections/:user_id/metadata/:collection_name", k.RequireUser, s.noCollection())
	k.Handle(http.MethodPost, "/collections/:user_id/view/:collection_name", k.RequireUser,
		s.noCollection(kv("properties", web.EmptyObject), kv("items", web.EmptyList)))
	k.Handle(http.MethodGet, "/collections/:user_id/get_object/:collection_name/:uuid", k.RequireUser,
		s.noCollection(kv("properties", web.EmptyObject), kv("items", web.EmptyList)))
	k.Handle(http.MethodGet, "/ws/process_collection", k.RequireKey, s.processCollectionWS)

	k.Handle(http.MethodPost, "/util/follow_up_suggestions", k.RequireKey, s.followUpSuggestions)
	k.Handle(http.MethodPost, "/util/title", k.RequireKey, s.title)

	k.Handle(http.MethodPost, "/feedback/add", k.RequireKey, s.feedbackAdd)
	k.Handle(http.MethodPost, "/feedback/remove", k.RequireKey, s.feedbackRemove)
	k.Handle(http.MethodGet, "/feedback/metadata/:user_id", k.RequireUser, s.feedbackMetadata)
}

// object is a response body with its keys in order; field is one of its
// members.
type (
	object = tools.Object
	field  = tools.Member
)

// kv is one member of a response body.
func kv(key string, value any) field { return field{Key: key, Value: value} }

// ok is the body of a successful answer: "error": "" and then fields.
func ok(fields ...field) object { return web.OK(fields...) }

// writeJSON answers with status and body.
func (s *routes) writeJSON(c *gin.Context, status int, body object) { s.k.WriteJSON(c, status, body) }

// fail answers with err mapped to its status, then extra.
func (s *routes) fail(c *gin.Context, err error, extra object) { s.k.Fail(c, err, extra) }

// bodyUser decodes a JSON body holding "user_id" (and the fields of dst)
// and checks that the key may act for that user; it answers the request
// itself and returns false when not.
func (s *routes) bodyUser(c *gin.Context, dst any, userID func() string, extra object, required ...string) bool {
	if err := s.k.Decode(c, dst, false, required...); err != nil {
		s.fail(c, err, extra)
		return false
	}
	u := userID()
	if err := s.k.CheckIDs("user_id", u); err != nil {
		s.fail(c, err, extra)
		return false
	}
	if !s.k.MayActFor(c, u) {
		s.fail(c, s.k.Forbidden(u), extra)
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
		panic("elysiaapi: " + err.Error())
	}
	return b
}
