package elysiaapi

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/elysia-go/elysia/tree"
	"github.com/elysia-go/elysia/web"
)

// This file holds how a save of the Settings page changes a config: the
// fields it may change, checked, and warnings for the settings it cannot.

// applyConfig applies body to sp. It fails on a field of the wrong type or
// size, naming it; settings it cannot change become warnings. "default":
// true makes sp the config in force; false leaves that as it is (Elysia's
// "save as default" box unticked: the config in force stays so).
func (s *routes) applyConfig(sp *tree.SavedProfile, body saveConfigBody) (warnings []string, err error) {
	if body.Name != nil {
		name := strings.TrimSpace(*body.Name)
		if len(name) > maxConfigName {
			return nil, web.BadRequest(fmt.Sprintf("name is %d bytes long; at most %d", len(name), maxConfigName))
		}
		if err := checkText("name", name, false); err != nil {
			return nil, err
		}
		if name != "" {
			sp.Name = name
		}
	}
	if body.Default != nil && *body.Default {
		sp.Default = true
	}
	texts := []struct {
		key, def string
		dst      *string
	}{
		{"style", web.DefaultStyle, &sp.Profile.Style},
		{"agent_description", web.DefaultAgentDescription, &sp.Profile.AgentDescription},
		{"end_goal", web.DefaultEndGoal, &sp.Profile.EndGoal},
	}
	for _, f := range texts {
		raw, ok := body.Config[f.key]
		if !ok || string(raw) == "null" {
			continue
		}
		var v string
		if json.Unmarshal(raw, &v) != nil {
			return nil, web.BadRequest("config." + f.key + " must be a string")
		}
		v = strings.TrimSpace(v)
		if len(v) > maxConfigText {
			return nil, web.BadRequest(fmt.Sprintf("config.%s is %d bytes long; at most %d", f.key, len(v), maxConfigText))
		}
		if err := checkText("config."+f.key, v, true); err != nil {
			return nil, err
		}
		if v == f.def {
			v = "" // the built-in text: nothing to add to the prompt
		}
		*f.dst = v
	}
	if raw, ok := body.Config["branch_initialisation"]; ok && string(raw) != "null" {
		var v string
		if json.Unmarshal(raw, &v) != nil {
			return nil, web.BadRequest("config.branch_initialisation must be a string")
		}
		mode, err := tree.ParseInitMode(v)
		if err != nil {
			return nil, web.BadRequest("config.branch_initialisation: " + err.Error())
		}
		if v == "" || mode == s.k.Trees().DefaultMode() {
			mode = "" // the service's default, whatever it becomes
		}
		sp.Profile.InitMode = mode
	}
	if raw, ok := body.Config["settings"]; ok && string(raw) != "null" {
		var settings map[string]json.RawMessage
		if json.Unmarshal(raw, &settings) != nil {
			return nil, web.BadRequest("config.settings must be an object")
		}
		warnings = s.settingsWarnings(settings)
	}
	return warnings, nil
}

// settingsWarnings names each setting of a save that differs from what
// this service reports and cannot change here. Values are never repeated:
// they may be API keys.
func (s *routes) settingsWarnings(settings map[string]json.RawMessage) []string {
	reported := map[string]any{}
	for _, e := range s.k.ModelSettings("") {
		reported[e.Key] = e.Value
	}
	var out []string
	for _, e := range s.k.ModelSettings("") {
		raw, ok := settings[e.Key]
		if !ok || e.Key == "SETTINGS_ID" {
			continue
		}
		var got any
		if json.Unmarshal(raw, &got) != nil || settingEqual(got, reported[e.Key]) {
			continue
		}
		switch {
		case e.Key == "API_KEYS":
			out = append(out, "config.settings.API_KEYS: API keys are not stored here; the model's keys come from the service's environment")
		case strings.Contains(e.Key, "MODEL") || strings.Contains(e.Key, "PROVIDER"):
			out = append(out, "config.settings."+e.Key+": the model comes from the service's environment (ELYSIA_LLM, ELYSIA_MODEL, ELYSIA_BASE_URL); not changed")
		default:
			out = append(out, "config.settings."+e.Key+": not used by this service; not changed")
		}
	}
	return out
}

// checkText refuses text a database cannot hold or a prompt should not:
// invalid UTF-8, NUL, and other control characters unless multiline allows
// newlines and tabs.
func checkText(field, v string, multiline bool) error {
	if !utf8.ValidString(v) {
		return web.BadRequest(field + " is not valid UTF-8")
	}
	if strings.ContainsFunc(v, func(r rune) bool {
		return unicode.IsControl(r) && (!multiline || (r != '\n' && r != '\t' && r != '\r'))
	}) {
		return web.BadRequest(field + " contains a control character")
	}
	return nil
}

// settingEqual compares a decoded setting with the value reported for it;
// an empty string and null are the same (no base URL).
func settingEqual(got, reported any) bool {
	if got == "" {
		got = nil
	}
	if reported == "" {
		reported = nil
	}
	a, errA := json.Marshal(got)
	b, errB := json.Marshal(reported)
	if errA != nil || errB != nil {
		return false
	}
	if string(b) == "{}" && (string(a) == "{}" || string(a) == "null") {
		return true
	}
	return string(a) == string(b)
}
