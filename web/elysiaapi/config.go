package elysiaapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/tree"
	"github.com/elysia-go/elysia/web"
)

// The configs of the Settings page: the built-in one is web's
// (web.BuiltinConfig, web.DefaultStyle, ...), and saved configs store only
// what differs from it, so that saving the page unchanged leaves the
// decision prompt as it was.
const (
	builtinConfigID   = tree.BuiltinProfileID
	builtinConfigName = web.BuiltinConfigName
	newConfigName     = "New Config"
	// maxConfigText bounds each of style, agent_description and end_goal:
	// they go into every decision's system message.
	maxConfigText = 4000
	// maxConfigName bounds a config's name.
	maxConfigName = 200
	// maxConfigs bounds how many configs a user keeps.
	maxConfigs = 100
)

// errNoConfigStore is the warning of the config routes without a database.
const errNoConfigStore = "configs are not saved: the service runs without a database"

// userConfig returns the config the user's queries use.
func (s *routes) userConfig(ctx context.Context, userID string) (tree.SavedProfile, error) {
	return s.k.UserConfig(ctx, userID)
}

// configByID returns one of the user's configs, Default set when it is the
// one in force; the built-in id names the built-in config until the user
// saves one under it.
func (s *routes) configByID(ctx context.Context, userID, id string) (tree.SavedProfile, error) {
	inForce, err := s.userConfig(ctx, userID)
	if err != nil {
		return tree.SavedProfile{}, err
	}
	if inForce.ID == id {
		return inForce, nil
	}
	if s.k.Configs() != nil {
		sp, err := s.k.Configs().Config(ctx, userID, id)
		if !errors.Is(err, tree.ErrNotFound) {
			sp.Default = false
			return sp, err
		}
	}
	if id == builtinConfigID {
		sp := web.BuiltinConfig()
		sp.Default = false // another config is in force
		return sp, nil
	}
	return tree.SavedProfile{}, noConfigError{web.Error(http.StatusNotFound, "no config "+quote(id)+" for user "+quote(userID))}
}

// noConfigError is configByID's 404: no config of that id.
type noConfigError struct{ error }

func (e noConfigError) Unwrap() error { return e.error }

// configModels serves GET /user/config/models: the one model this service
// is configured with, in Elysia's {provider: {model: info}} shape.
func (s *routes) configModels(c *gin.Context) {
	models := object{}
	if s.k.Model().Provider != "" {
		models = object{kv(s.k.Model().Provider, object{kv(s.k.Model().Model, object{
			kv("name", s.k.Model().Model), kv("api_keys", []string{}), kv("speed", "medium"), kv("accuracy", "medium"),
		})})}
	}
	s.writeJSON(c, http.StatusOK, ok(kv("models", models)))
}

// configAnswer answers 200 with sp, the frontend config and warnings.
func (s *routes) configAnswer(c *gin.Context, sp tree.SavedProfile, warnings []string) {
	if warnings == nil {
		warnings = []string{}
	}
	s.writeJSON(c, http.StatusOK, ok(kv("config", s.k.ConfigJSON(sp)), kv("frontend_config", s.k.FrontendConfig()), kv("warnings", warnings)))
}

// configFailed is the extra of a failed config answer.
var configFailed = object{kv("config", web.EmptyObject), kv("frontend_config", web.EmptyObject), kv("warnings", []string{})}

// userConfigGet serves GET /user/config/:user_id (the config in force) and
// GET /user/config/:user_id/:config_id/load (one config).
func (s *routes) userConfigGet(c *gin.Context) {
	ctx, user := c.Request.Context(), c.Param("user_id")
	var (
		sp  tree.SavedProfile
		err error
	)
	if id := c.Param("config_id"); id != "" {
		sp, err = s.configByID(ctx, user, id)
	} else {
		sp, err = s.userConfig(ctx, user)
	}
	if err != nil {
		s.fail(c, err, configFailed)
		return
	}
	s.configAnswer(c, sp, nil)
}

// userConfigLoad serves POST /user/config/:user_id/:config_id/load: the
// config becomes the one the user's queries use.
func (s *routes) userConfigLoad(c *gin.Context) {
	ctx, user := c.Request.Context(), c.Param("user_id")
	sp, err := s.configByID(ctx, user, c.Param("config_id"))
	if err != nil {
		s.fail(c, err, configFailed)
		return
	}
	if s.k.Configs() == nil {
		s.configAnswer(c, sp, []string{errNoConfigStore})
		return
	}
	sp.Default = true
	if err := s.k.Configs().SaveConfig(ctx, user, sp); err != nil {
		s.fail(c, err, configFailed)
		return
	}
	s.configAnswer(c, sp, nil)
}

// userConfigList serves GET /user/config/:user_id/list. The built-in
// config is listed while the user has not replaced it, and is the default
// while no saved config is.
func (s *routes) userConfigList(c *gin.Context) {
	ctx, user := c.Request.Context(), c.Param("user_id")
	var saved []tree.SavedProfile
	if s.k.Configs() != nil {
		var err error
		if saved, err = s.k.Configs().Configs(ctx, user); err != nil {
			s.fail(c, err, object{kv("configs", []object{}), kv("warnings", []string{})})
			return
		}
	}
	hasDefault, hasBuiltin := false, false
	for _, sp := range saved {
		hasDefault = hasDefault || sp.Default
		hasBuiltin = hasBuiltin || sp.ID == builtinConfigID
	}
	list := make([]object, 0, len(saved)+1)
	for _, sp := range saved {
		// The one saved under the built-in id is in force while no other is.
		inForce := sp.Default || (!hasDefault && sp.ID == builtinConfigID)
		list = append(list, object{kv("config_id", sp.ID), kv("name", sp.Name),
			kv("last_update_time", sp.Updated.Format(time.RFC3339Nano)), kv("default", inForce)})
	}
	if !hasBuiltin {
		list = append(list, object{kv("config_id", builtinConfigID), kv("name", builtinConfigName),
			kv("last_update_time", ""), kv("default", !hasDefault)})
	}
	s.writeJSON(c, http.StatusOK, ok(kv("configs", list), kv("warnings", []string{})))
}

// userConfigNew serves POST /user/config/:user_id/new: a new config with
// the built-in settings under a fresh id, not saved until the page saves it
// (as Elysia does).
func (s *routes) userConfigNew(c *gin.Context) {
	if _, err := s.k.ReadBody(c); err != nil {
		s.fail(c, err, configFailed)
		return
	}
	s.configAnswer(c, tree.SavedProfile{ID: tools.NewID(), Name: newConfigName}, nil)
}

// saveConfigBody is the body of POST /user/config/:user_id/:config_id
// (Elysia's SaveConfigUserData). Every field is optional; config holds
// only what changes.
type saveConfigBody struct {
	Name           *string                    `json:"name"`
	Default        *bool                      `json:"default"`
	Config         map[string]json.RawMessage `json:"config"`
	FrontendConfig json.RawMessage            `json:"frontend_config"`
}

// userConfigSave serves POST /user/config/:user_id/:config_id: the changes
// apply to the saved config of that id (or the built-in settings), which
// is saved, and becomes the default when "default" is true. Settings this
// service takes from its environment (the model, API keys) are not
// changed; a warning names each that the body tried to change.
func (s *routes) userConfigSave(c *gin.Context) {
	ctx, user, id := c.Request.Context(), c.Param("user_id"), c.Param("config_id")
	var body saveConfigBody
	if err := s.k.Decode(c, &body, true); err != nil {
		s.fail(c, err, configFailed)
		return
	}
	if err := s.k.CheckIDs("config_id", id); err != nil {
		s.fail(c, err, configFailed)
		return
	}
	sp, err := s.configByID(ctx, user, id)
	var missing noConfigError
	if errors.As(err, &missing) {
		// A config the page made with /new.
		sp, err = tree.SavedProfile{ID: id, Name: newConfigName}, s.roomForConfig(ctx, user)
	}
	if err != nil {
		s.fail(c, err, configFailed)
		return
	}
	warnings, err := s.applyConfig(&sp, body)
	if err != nil {
		s.fail(c, err, configFailed)
		return
	}
	if s.k.Configs() == nil {
		s.configAnswer(c, sp, append(warnings, errNoConfigStore))
		return
	}
	if err := s.k.Configs().SaveConfig(ctx, user, sp); err != nil {
		s.fail(c, err, configFailed)
		return
	}
	s.configAnswer(c, sp, warnings)
}

// roomForConfig fails with 409 when the user keeps maxConfigs configs.
func (s *routes) roomForConfig(ctx context.Context, user string) error {
	if s.k.Configs() == nil {
		return nil
	}
	saved, err := s.k.Configs().Configs(ctx, user)
	if err != nil {
		return err
	}
	if len(saved) >= maxConfigs {
		return web.Error(http.StatusConflict, fmt.Sprintf("user %s keeps %d configs, the most there may be; delete one first", quote(user), len(saved)))
	}
	return nil
}

// userConfigFrontend serves PATCH /user/config/frontend_config/:user_id:
// the frontend config says where Elysia saves to Weaviate, which this
// service does not use, so nothing changes and the answer says so.
func (s *routes) userConfigFrontend(c *gin.Context) {
	if _, err := s.k.ReadBody(c); err != nil {
		s.fail(c, err, configFailed)
		return
	}
	sp, err := s.userConfig(c.Request.Context(), c.Param("user_id"))
	if err != nil {
		s.fail(c, err, configFailed)
		return
	}
	s.configAnswer(c, sp, []string{"the frontend config says where to save to Weaviate; this service saves to its own database, so it is not changed"})
}

// userConfigDelete serves DELETE /user/config/:user_id/:config_id. The
// user's queries fall back to the built-in config when the default is
// deleted.
func (s *routes) userConfigDelete(c *gin.Context) {
	ctx, user, id := c.Request.Context(), c.Param("user_id"), c.Param("config_id")
	if s.k.Configs() != nil {
		err := s.k.Configs().DeleteConfig(ctx, user, id)
		if !errors.Is(err, tree.ErrNotFound) {
			if err != nil {
				s.fail(c, err, nil)
				return
			}
			s.writeJSON(c, http.StatusOK, ok())
			return
		}
	}
	if id == builtinConfigID {
		s.fail(c, web.Error(http.StatusUnprocessableEntity, "the built-in config cannot be deleted"), nil)
		return
	}
	s.fail(c, web.Error(http.StatusNotFound, "no config "+quote(id)+" for user "+quote(user)), nil)
}

// treeConfig serves /tree/config/:user_id/:conversation_id (get, save,
// new): a conversation uses its user's config, so saving one for a single
// conversation is refused with a warning that says where to save it.
func (s *routes) treeConfig(c *gin.Context, user string) {
	var warnings []string
	if c.Request.Method == http.MethodPost {
		if _, err := s.k.ReadBody(c); err != nil {
			s.fail(c, err, object{kv("config", web.EmptyObject)})
			return
		}
		warnings = []string{"a conversation uses its user's config: save it with POST /user/config/" + user + "/<config_id>"}
	}
	sp, err := s.userConfig(c.Request.Context(), user)
	if err != nil {
		s.fail(c, err, object{kv("config", web.EmptyObject)})
		return
	}
	if warnings == nil {
		warnings = []string{}
	}
	s.writeJSON(c, http.StatusOK, ok(kv("config", s.k.ConfigJSON(sp)), kv("warnings", warnings)))
}

// treeConfigPost serves POST /tree/config/:user_id/:conversation_id[/new].
func (s *routes) treeConfigPost(c *gin.Context) { s.treeConfig(c, c.Param("user_id")) }

// treeConfigGet serves GET /tree/config/:user_id/:conversation_id, which
// gin routes as /tree/:user_id/:conversation_id/*rest with user_id
// "config".
func (s *routes) treeConfigGet(c *gin.Context) {
	user, conv := c.Param("conversation_id"), strings.TrimPrefix(c.Param("rest"), "/")
	if c.Param("user_id") != "config" || conv == "" || strings.Contains(conv, "/") {
		s.fail(c, web.Error(http.StatusNotFound, "no route for "+c.Request.Method+" "+c.Request.URL.Path), nil)
		return
	}
	if !s.k.AuthorizeUser(c, user) {
		return
	}
	if err := s.k.CheckIDs("user_id", user, "conversation_id", conv); err != nil {
		s.fail(c, err, object{kv("config", web.EmptyObject)})
		return
	}
	s.treeConfig(c, user)
}
