package elysiaapi

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/elysia-go/elysia/web"
)

// configAnswerJSON is the part of a config route's answer the tests read.
type configAnswerJSON struct {
	Error  string `json:"error"`
	Config struct {
		ID                   string         `json:"id"`
		Name                 string         `json:"name"`
		Style                string         `json:"style"`
		AgentDescription     string         `json:"agent_description"`
		EndGoal              string         `json:"end_goal"`
		BranchInitialisation string         `json:"branch_initialisation"`
		Settings             map[string]any `json:"settings"`
	} `json:"config"`
	Warnings []string `json:"warnings"`
	Configs  []struct {
		ConfigID string `json:"config_id"`
		Name     string `json:"name"`
		Default  bool   `json:"default"`
	} `json:"configs"`
}

func (h *harness) config(t *testing.T, method, path, body string, wantStatus int) configAnswerJSON {
	t.Helper()
	rec := h.do(t, method, path, body)
	if rec.Code != wantStatus {
		t.Fatalf("%s %s: %d, want %d: %s", method, path, rec.Code, wantStatus, rec.Body)
	}
	var a configAnswerJSON
	if err := json.Unmarshal(rec.Body.Bytes(), &a); err != nil {
		t.Fatalf("%s %s: %v: %s", method, path, err, rec.Body)
	}
	return a
}

// TestUserConfigsAreSaved walks Elysia's Settings page: a new config,
// saved as the default with its own style, listed, loaded, the tree mode
// of a new conversation taken from it, and deleted.
func TestUserConfigsAreSaved(t *testing.T) {
	h := newHarness(t, nil)
	if a := h.config(t, "GET", "/user/config/alice", "", 200); a.Config.ID != builtinConfigID || a.Config.Style != web.DefaultStyle {
		t.Fatalf("config of a user who saved none = %+v, want the built-in one", a.Config)
	}
	id := h.config(t, "POST", "/user/config/alice/new", "", 200).Config.ID
	if list := h.config(t, "GET", "/user/config/alice/list", "", 200).Configs; len(list) != 1 {
		t.Errorf("a new config was saved before the page saved it: %+v", list)
	}

	save := `{"name": "Shopping", "default": true, "frontend_config": {}, "config": {
		"style": "Terse.", "agent_description": "You keep my shopping list.", "end_goal": "The list is right.",
		"branch_initialisation": "empty",
		"settings": {"API_KEYS": {"openai_api_key": "sk-do-not-echo"}, "BASE_MODEL": "gpt-99", "LOGGING_LEVEL": "INFO"}}}`
	a := h.config(t, "POST", "/user/config/alice/"+id, save, 200)
	if a.Config.ID != id || a.Config.Name != "Shopping" || a.Config.Style != "Terse." || a.Config.BranchInitialisation != "empty" {
		t.Errorf("saved config = %+v", a.Config)
	}
	warnings := strings.Join(a.Warnings, "\n")
	if !strings.Contains(warnings, "API_KEYS") || !strings.Contains(warnings, "BASE_MODEL") || strings.Contains(warnings, "LOGGING_LEVEL") {
		t.Errorf("warnings = %q, want API_KEYS and BASE_MODEL named (the model comes from the environment), not LOGGING_LEVEL (unchanged)", a.Warnings)
	}
	rec := h.do(t, "GET", "/user/config/alice/"+id+"/load", "")
	if strings.Contains(rec.Body.String()+warnings, "sk-do-not-echo") || strings.Contains(rec.Body.String(), "gpt-99") {
		t.Errorf("an API key or refused model came back: %s", rec.Body)
	}

	if a := h.config(t, "GET", "/user/config/alice", "", 200); a.Config.ID != id || a.Config.AgentDescription != "You keep my shopping list." {
		t.Errorf("config in force after saving a default = %+v", a.Config)
	}
	prof, err := h.store.Profile(t.Context(), "alice")
	if err != nil || prof.Style != "Terse." || prof.EndGoal != "The list is right." {
		t.Errorf("the profile alice's queries get = %+v, %v", prof, err)
	}
	list := h.config(t, "GET", "/user/config/alice/list", "", 200).Configs
	if len(list) != 2 || list[0].ConfigID != id || !list[0].Default || list[1].ConfigID != builtinConfigID || list[1].Default {
		t.Errorf("list = %+v, want the saved default, then the built-in one", list)
	}
	if list := h.config(t, "GET", "/user/config/bob/list", "", 200).Configs; len(list) != 1 || !list[0].Default {
		t.Errorf("bob's list = %+v, want only his built-in config", list)
	}

	// A new conversation without a named mode starts as the config says.
	// (An empty tree has the gateways only; one_branch adds text_response.)
	if rec := h.do(t, "POST", "/init/tree/alice/c9", `{"low_memory": false}`); rec.Code != 200 || strings.Contains(rec.Body.String(), `"text_response"`) {
		t.Errorf("POST /init/tree with the config's empty mode: %d %s", rec.Code, rec.Body)
	}
	if rec := h.do(t, "POST", "/init/tree/bob/c9", `{}`); rec.Code != 200 || !strings.Contains(rec.Body.String(), `"text_response"`) {
		t.Errorf("POST /init/tree for bob, without a config: %d %s", rec.Code, rec.Body)
	}

	// Saving the built-in texts stores nothing for them.
	a = h.config(t, "POST", "/user/config/alice/"+id, `{"config": {"style": "`+web.DefaultStyle+`"}}`, 200)
	if prof, _ := h.store.Profile(t.Context(), "alice"); prof.Style != "" || a.Config.Style != web.DefaultStyle {
		t.Errorf("saving the built-in style stored %q, shows %q", prof.Style, a.Config.Style)
	}

	// Loading the built-in config makes it the default again.
	h.config(t, "POST", "/user/config/alice/"+builtinConfigID+"/load", "", 200)
	if a := h.config(t, "GET", "/user/config/alice", "", 200); a.Config.ID != builtinConfigID {
		t.Errorf("config in force after loading the built-in one = %+v", a.Config)
	}
	h.config(t, "POST", "/user/config/alice/"+id+"/load", "", 200)

	if rec := h.do(t, "DELETE", "/user/config/alice/"+id, ""); rec.Code != 200 {
		t.Fatalf("DELETE: %d %s", rec.Code, rec.Body)
	}
	if a := h.config(t, "GET", "/user/config/alice", "", 200); a.Config.ID == id {
		t.Errorf("the deleted default is still in force: %+v", a.Config)
	}
	if rec := h.do(t, "DELETE", "/user/config/alice/"+id, ""); rec.Code != 404 {
		t.Errorf("second DELETE: %d %s", rec.Code, rec.Body)
	}
}

// TestUserConfigBadInput: each bad field is named, and what was saved
// before stays.
func TestUserConfigBadInput(t *testing.T) {
	h := newHarness(t, nil)
	h.config(t, "POST", "/user/config/alice/mine", `{"default": true, "config": {"style": "Terse."}}`, 200)
	for _, tt := range []struct{ body, want string }{
		{`{"config": {"style": 5}}`, "config.style must be a string"},
		{`{"config": {"end_goal": "` + strings.Repeat("x", maxConfigText+1) + `"}}`, "config.end_goal is 4001 bytes long; at most 4000"},
		{`{"config": {"branch_initialisation": "sideways"}}`, "config.branch_initialisation"},
		{`{"config": {"settings": []}}`, "config.settings must be an object"},
		{`{"name": "` + strings.Repeat("n", maxConfigName+1) + `"}`, "name is 201 bytes long"},
		{`{"config": `, "invalid JSON body"},
	} {
		a := h.config(t, "POST", "/user/config/alice/mine", tt.body, 400)
		if !strings.Contains(a.Error, tt.want) {
			t.Errorf("%.60s: error %q, want %q", tt.body, a.Error, tt.want)
		}
	}
	if a := h.config(t, "GET", "/user/config/alice", "", 200); a.Config.ID != "mine" || a.Config.Style != "Terse." {
		t.Errorf("after bad saves the config is %+v, want mine, Terse.", a.Config)
	}
	h.config(t, "POST", "/user/config/bob/mine", `{"default": true, "config": {"style": "Chatty."}}`, 200)
	if a := h.config(t, "GET", "/user/config/alice", "", 200); a.Config.Style != "Terse." {
		t.Errorf("bob's save of a config with the same id changed alice's: %+v", a.Config)
	}
	if rec := h.do(t, "DELETE", "/user/config/alice/"+builtinConfigID, ""); rec.Code != 422 {
		t.Errorf("DELETE of the built-in config: %d %s", rec.Code, rec.Body)
	}
}

// TestUserConfigInForce: saving the config in force with "save as default"
// unticked keeps it in force; one saved under the built-in id is in force
// while no other is, for the routes and for the user's queries alike.
func TestUserConfigInForce(t *testing.T) {
	h := newHarness(t, nil)
	h.config(t, "POST", "/user/config/bob/x", `{"default": true, "config": {"style": "Plain."}}`, 200)
	h.config(t, "POST", "/user/config/bob/x", `{"default": false, "config": {"style": "Pirate!"}}`, 200)
	if a := h.config(t, "GET", "/user/config/bob", "", 200); a.Config.ID != "x" || a.Config.Style != "Pirate!" {
		t.Errorf("after a save with default false, in force: %+v; want x, still", a.Config)
	}

	h.config(t, "POST", "/user/config/carol/"+builtinConfigID, `{"name": "Mine", "default": false, "config": {"style": "Saved."}}`, 200)
	got := h.config(t, "GET", "/user/config/carol", "", 200).Config
	loaded := h.config(t, "GET", "/user/config/carol/"+builtinConfigID+"/load", "", 200).Config
	prof, err := h.store.Profile(t.Context(), "carol")
	if got.Style != "Saved." || loaded.Style != "Saved." || err != nil || prof.Style != "Saved." {
		t.Errorf("the config saved under the built-in id: in force %+v, loaded %+v, profile %+v %v; want it everywhere", got, loaded, prof, err)
	}
	list := h.config(t, "GET", "/user/config/carol/list", "", 200).Configs
	if len(list) != 1 || list[0].ConfigID != builtinConfigID || !list[0].Default {
		t.Errorf("carol's list = %+v, want her one config, in force", list)
	}
}

// TestUserConfigRefusesBadTextAndIDs: what a database cannot hold is a 400
// naming the field, and a user's configs are bounded.
func TestUserConfigRefusesBadTextAndIDs(t *testing.T) {
	h := newHarness(t, nil)
	for _, tt := range []struct{ method, path, body, want string }{
		{"POST", "/user/config/alice/c1", `{"name": "a\u0000b"}`, "name contains a control character"},
		{"POST", "/user/config/alice/c1", `{"config": {"style": "a\u0000b"}}`, "config.style contains a control character"},
		{"GET", "/user/config/alice/%ff/load", "", "config_id is not valid UTF-8"},
		{"POST", "/user/config/alice/a%01b/load", "", "config_id contains a control character"},
		{"DELETE", "/user/config/alice/%ff", "", "config_id is not valid UTF-8"},
	} {
		if a := h.config(t, tt.method, tt.path, tt.body, 400); !strings.Contains(a.Error, tt.want) {
			t.Errorf("%s %s: error %q, want %q", tt.method, tt.path, a.Error, tt.want)
		}
	}
	if a := h.config(t, "POST", "/user/config/alice/c1", `{"config": {"style": "line one\nline two"}}`, 200); a.Config.Style != "line one\nline two" {
		t.Errorf("a style on two lines was changed: %q", a.Config.Style)
	}
	for i := 2; i <= maxConfigs; i++ {
		h.config(t, "POST", fmt.Sprintf("/user/config/alice/c%d", i), `{}`, 200)
	}
	if a := h.config(t, "POST", "/user/config/alice/one-too-many", `{}`, 409); !strings.Contains(a.Error, "delete one first") {
		t.Errorf("config number %d: %q", maxConfigs+1, a.Error)
	}
	h.config(t, "POST", "/user/config/alice/c1", `{"config": {"style": "Still editable."}}`, 200)
}
