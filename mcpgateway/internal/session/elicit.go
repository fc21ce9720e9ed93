package session

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/tools"
)

// elicitation answers a server's elicitation/create on behalf of the user
// whose call caused it (DESIGN.md, "Server-initiated messages"): the
// question goes to that call's Asker only; a form's schema must be the flat
// one the specification allows; an accepted answer's missing fields take the
// schema's defaults (SEP-1034) and the whole is validated before it is sent.
// Without an interactive user, or when elicitation_timeout passes, the
// answer is decline, with the reason logged.
type elicitation struct {
	c *Conn
	s *Session
}

// Elicit implements mcp-go's client.ElicitationHandler.
func (e elicitation) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	ctx = claimInputKey(ctx, mcp.MethodElicitationCreate, req.Params)
	p := req.Params
	mode := p.Mode
	if mode == "" {
		mode = mcp.ElicitationModeForm
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("invalid elicitation request: %w", err)
	}
	payload := tools.ElicitationPayload{Server: e.c.cfg.Name, Mode: mode, Message: truncate(e.c.mask(p.Message), 2000)}
	var check func(map[string]any) (map[string]any, error)
	if mode == mcp.ElicitationModeForm {
		schema, err := formSchema(p.RequestedSchema)
		if err != nil {
			return nil, fmt.Errorf("invalid requestedSchema: %w", err)
		}
		payload.RequestedSchema = schema
		payload.FieldOrder = e.s.orders.take(schema)
		check, err = formCheck(schema)
		if err != nil {
			return nil, fmt.Errorf("invalid requestedSchema: %w", err)
		}
	} else {
		payload.URL = p.URL
		if len(p.ElicitationID) <= maxElicitationIDBytes { // a longer one is never relayed
			payload.ServerElicitationID = p.ElicitationID
		}
	}

	ac := e.s.callFor(ctx)
	// A decline says why in its _meta, for the server's log: the answer
	// has no field for it.
	decline := func(reason string) (*mcp.ElicitationResult, error) {
		e.c.logger.InfoContext(ctx, "elicitation declined", "reason", reason, "mode", mode)
		res := &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionDecline}}
		res.Meta = &mcp.Meta{AdditionalFields: map[string]any{"reason": reason}}
		return res, nil
	}
	if ac == nil {
		return decline("no call of a user is waiting on this server, or several are and the question names none")
	}
	payload.Tool = ac.tool
	if n := ac.asked(); n > MaxElicitationsPerCall {
		if n == MaxElicitationsPerCall+1 {
			ac.relay.event(tools.NewWarning(fmt.Sprintf("%s asked more than %d questions in one call of %s; the others were declined",
				e.c.cfg.Name, MaxElicitationsPerCall, ac.tool)))
		}
		return decline(fmt.Sprintf("more than %d questions in one call (the gateway's cap per call)", MaxElicitationsPerCall))
	}
	asker, ok := ac.emit.(tools.Asker)
	if !ok {
		return decline("no interactive user (the call came through the API)")
	}
	if ec := completerOf(ac); ec != nil && mode == mcp.ElicitationModeURL {
		e.s.urls.add(p.ElicitationID, ec)
	}
	_, wait := e.c.cfg.Limits()
	actx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	// The user's reading time is not the server's: call_timeout waits
	// (elicitation_timeout bounds the question, max_call_time the call).
	defer ac.clock.hold()()
	ans, err := asker.Ask(actx, tools.Question{Payload: payload, Check: check})
	switch {
	case err != nil && actx.Err() != nil && ctx.Err() == nil:
		return decline(fmt.Sprintf("no answer within elicitation_timeout %v", wait))
	case err != nil:
		return nil, err
	case ans.Reason != "":
		return decline(ans.Reason)
	}
	res := &mcp.ElicitationResult{}
	switch ans.Action {
	case tools.ElicitAccept:
		res.Action = mcp.ElicitationResponseActionAccept
		if check != nil {
			content, err := check(ans.Content)
			if err != nil { // the Asker should have checked; never send a bad answer
				return decline("the answer does not match the form: " + err.Error())
			}
			res.Content = content
		}
	case tools.ElicitCancel:
		res.Action = mcp.ElicitationResponseActionCancel
	default:
		res.Action = mcp.ElicitationResponseActionDecline
	}
	return res, nil
}

// formSchema checks that a requestedSchema is the restricted form the
// specification allows (an object of primitive properties: string, number,
// integer, boolean, or an enum, single or multiple) and returns it as a map.
func formSchema(raw any) (map[string]any, error) {
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	var schema map[string]any
	if err := json.Unmarshal(b, &schema); err != nil || schema == nil {
		return nil, fmt.Errorf("want a JSON object")
	}
	if t, _ := schema["type"].(string); t != "object" {
		return nil, fmt.Errorf(`type must be "object"`)
	}
	props, _ := schema["properties"].(map[string]any)
	if props == nil {
		return nil, fmt.Errorf("properties must be an object")
	}
	for _, name := range slices.Sorted(maps.Keys(props)) {
		prop, _ := props[name].(map[string]any)
		if prop == nil {
			return nil, fmt.Errorf("property %q must be a schema object", name)
		}
		switch t, _ := prop["type"].(string); t {
		case "string", "number", "integer", "boolean":
		case "array":
			items, _ := prop["items"].(map[string]any)
			if items == nil || (items["enum"] == nil && items["anyOf"] == nil && items["oneOf"] == nil) {
				return nil, fmt.Errorf("property %q: an array must be a multiple choice (items with enum, anyOf or oneOf)", name)
			}
		default:
			return nil, fmt.Errorf("property %q: type %q is not a primitive (string, number, integer, boolean or a multiple-choice array)", name, t)
		}
	}
	if req, ok := schema["required"]; ok {
		list, ok := req.([]any)
		if !ok {
			return nil, fmt.Errorf("required must be an array of property names")
		}
		for _, r := range list {
			if name, _ := r.(string); props[name] == nil {
				return nil, fmt.Errorf("required names %v, which is not a property", r)
			}
		}
	}
	return schema, nil
}

// formCheck returns the check of an accepted answer to schema: missing
// fields take their defaults, then the whole must validate.
func formCheck(schema map[string]any) (func(map[string]any) (map[string]any, error), error) {
	raw, _ := json.Marshal(schema)
	compiled, err := tools.CompileSchema(raw)
	if err != nil {
		return nil, err
	}
	props, _ := schema["properties"].(map[string]any)
	return func(content map[string]any) (map[string]any, error) {
		out := make(map[string]any, len(props))
		maps.Copy(out, content)
		for name, p := range props {
			if _, set := out[name]; set {
				continue
			}
			if d, ok := p.(map[string]any)["default"]; ok {
				out[name] = d
			}
		}
		if err := compiled.Validate("the form", out); err != nil {
			return nil, err
		}
		return out, nil
	}, nil
}
