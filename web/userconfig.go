package web

import (
	"context"
	"strings"

	"github.com/elysia-go/elysia/tree"
)

// ConfigStore keeps users' named configs (Elysia's Settings page): a name
// and a tree.Profile each, at most one of a user's the default. persist
// satisfies it. Safe for concurrent use.
type ConfigStore interface {
	// SaveConfig creates or replaces a config; one saved as the default
	// stops the user's others from being it.
	SaveConfig(ctx context.Context, userID string, sp tree.SavedProfile) error
	// Config returns a config; a missing one is an error matching
	// tree.ErrNotFound.
	Config(ctx context.Context, userID, configID string) (tree.SavedProfile, error)
	// DefaultConfig returns the user's default config; ok is false when
	// the user has none.
	DefaultConfig(ctx context.Context, userID string) (sp tree.SavedProfile, ok bool, err error)
	// Configs returns the user's configs, the most recently saved first.
	Configs(ctx context.Context, userID string) ([]tree.SavedProfile, error)
	// DeleteConfig removes a config; a missing one is an error matching
	// tree.ErrNotFound.
	DeleteConfig(ctx context.Context, userID, configID string) error
}

// The built-in config: what a user who saved none has, with the texts the
// Settings page shows for the fields a saved config leaves empty. Saved
// configs store only what differs from these, so that saving the page
// unchanged leaves the decision prompt as it was.
const (
	// BuiltinConfigName is the built-in config's name (its id is
	// tree.BuiltinProfileID).
	BuiltinConfigName = "Elysia-Go"
	// DefaultStyle is the style of a config that sets none.
	DefaultStyle = "Informative, polite and friendly."
	// DefaultAgentDescription is the agent description of a config that
	// sets none.
	DefaultAgentDescription = "You choose and call the tools of the configured MCP servers to satisfy the user's query, then answer concisely."
	// DefaultEndGoal is the end goal of a config that sets none.
	DefaultEndGoal = "You have satisfied the user's query, or exhausted the tools available, or asked the user for clarification."
)

// notNeededSettings are Elysia's settings (Settings.check) that configure
// Weaviate, which an MCP backend does not use. POST /init/user lists them
// under "settings_not_needed" and leaves them out of "correct_settings", so
// that the frontend neither claims they are set nor asks for them.
var notNeededSettings = []string{"wcd_url", "wcd_api_key", "weaviate_is_local", "local_weaviate_port", "local_weaviate_grpc_port"}

// BuiltinConfig is the config of a user who saved none.
func BuiltinConfig() tree.SavedProfile {
	return tree.SavedProfile{ID: tree.BuiltinProfileID, Name: BuiltinConfigName, Default: true}
}

// userConfig returns the config the user's queries use: the saved default
// (or the one saved under the built-in id), else the built-in one.
func (s *Server) userConfig(ctx context.Context, userID string) (tree.SavedProfile, error) {
	if s.deps.Configs == nil {
		return BuiltinConfig(), nil
	}
	sp, ok, err := s.deps.Configs.DefaultConfig(ctx, userID)
	if err != nil || !ok {
		return BuiltinConfig(), err
	}
	return sp, nil
}

// orDefault returns v, or def when v is empty.
func orDefault(v, def string) string {
	if strings.TrimSpace(v) == "" {
		return def
	}
	return v
}

// elysiaConfig is sp in Elysia's Config.to_json shape, with the service's
// model settings, plus "model" and "config_file".
func (s *Server) elysiaConfig(sp tree.SavedProfile) object {
	mode := sp.Profile.InitMode
	if mode == "" {
		mode = s.deps.Trees.DefaultMode()
	}
	return object{
		kv("id", sp.ID),
		kv("name", sp.Name),
		kv("settings", s.modelSettings(sp.ID)),
		kv("style", orDefault(sp.Profile.Style, DefaultStyle)),
		kv("agent_description", orDefault(sp.Profile.AgentDescription, DefaultAgentDescription)),
		kv("end_goal", orDefault(sp.Profile.EndGoal, DefaultEndGoal)),
		kv("branch_initialisation", string(mode)),
		kv("use_elysia_collections", false),
		kv("model", s.model),
		kv("config_file", s.configFile),
	}
}

// modelSettings is Elysia's Settings.to_json for this service: the model
// comes from the environment, and Weaviate is not used.
func (s *Server) modelSettings(id string) object {
	m := s.model
	var base any
	if m.BaseURL != "" {
		base = m.BaseURL
	}
	return object{
		kv("API_KEYS", emptyObject),
		kv("BASE_MODEL", m.Model), kv("BASE_PROVIDER", m.Provider),
		kv("COMPLEX_MODEL", m.Model), kv("COMPLEX_PROVIDER", m.Provider),
		kv("MODEL_API_BASE", base),
		kv("LOGGING_LEVEL", "INFO"), kv("LOGGING_LEVEL_INT", 20),
		kv("SETTINGS_ID", id), kv("USE_FEEDBACK", s.deps.Feedback != nil),
		kv("WCD_URL", ""), kv("WCD_API_KEY", ""), kv("WEAVIATE_IS_LOCAL", false),
		kv("LOCAL_WEAVIATE_PORT", 8080), kv("LOCAL_WEAVIATE_GRPC_PORT", 50051),
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
