package web

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/elysia-go/elysia/tree"
)

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
