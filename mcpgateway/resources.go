package mcpgateway

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/mcpgateway/internal/session"
	"github.com/elysia-go/elysia/tools"
)

// ResourceInfo is one resource or resource template a server lists.
type ResourceInfo struct {
	URI         string `json:"uri,omitempty"`
	URITemplate string `json:"uri_template,omitempty"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	MIMEType    string `json:"mime_type,omitempty"`
}

// PromptInfo is one prompt a server lists.
type PromptInfo struct {
	Name        string           `json:"name"`
	Description string           `json:"description,omitempty"`
	Arguments   []PromptArgument `json:"arguments"`
}

// PromptArgument is one argument of a prompt.
type PromptArgument struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required"`
}

// PromptMessage is one message of a prompt a server gave, as a content item
// (text, image, audio, resource) with its role, capped like a call result.
type PromptMessage struct {
	Role    string         `json:"role"`
	Content map[string]any `json:"content"`
}

// maxPages bounds the pages a listing follows.
const maxPages = 100

// ListResources returns the server's resources and then its resource
// templates, following pagination.
func (g *Gateway) ListResources(ctx context.Context) ([]ResourceInfo, error) {
	var out []ResourceInfo
	err := g.request(ctx, "resources/list", func(ctx context.Context, s *session.Session) error {
		out = out[:0]
		cursor := mcp.Cursor("")
		for page := 0; page < maxPages; page++ {
			req := mcp.ListResourcesRequest{}
			req.Params.Cursor = cursor
			res, err := s.Client().ListResourcesByPage(ctx, req)
			if err != nil {
				return err
			}
			for _, r := range res.Resources {
				out = append(out, ResourceInfo{URI: r.URI, Name: r.Name, Description: r.Description, MIMEType: r.MIMEType})
			}
			if cursor = res.NextCursor; cursor == "" {
				break
			}
		}
		treq := mcp.ListResourceTemplatesRequest{}
		tres, err := s.Client().ListResourceTemplatesByPage(ctx, treq)
		if err != nil {
			if session.IsServerAnswer(err) {
				return nil // templates are optional
			}
			return err
		}
		for _, t := range tres.ResourceTemplates {
			tmpl := ""
			if t.URITemplate != nil && t.URITemplate.Template != nil {
				tmpl = t.URITemplate.Raw()
			}
			out = append(out, ResourceInfo{URITemplate: tmpl, Name: t.Name, Description: t.Description, MIMEType: t.MIMEType})
		}
		return nil
	})
	return out, err
}

// ReadResource reads the resource at uri; its contents come back as a
// CallResult's content items, capped at OutputCap.
func (g *Gateway) ReadResource(ctx context.Context, uri string) (*CallResult, error) {
	if uri == "" {
		return nil, &tools.ArgumentError{Tool: "read_resource", Problems: []string{"uri is required"}}
	}
	var out *CallResult
	err := g.request(ctx, "resources/read", func(ctx context.Context, s *session.Session) error {
		req := mcp.ReadResourceRequest{}
		req.Params.URI = uri
		res, err := s.Client().ReadResource(ctx, req)
		if err != nil {
			return err
		}
		as := &mcp.CallToolResult{}
		for _, c := range res.Contents {
			as.Content = append(as.Content, mcp.EmbeddedResource{Type: "resource", Resource: c})
		}
		out = convert(as, g.opts.OutputCap)
		return nil
	})
	return out, err
}

// ListPrompts returns the server's prompts, following pagination.
func (g *Gateway) ListPrompts(ctx context.Context) ([]PromptInfo, error) {
	var out []PromptInfo
	err := g.request(ctx, "prompts/list", func(ctx context.Context, s *session.Session) error {
		out = out[:0]
		cursor := mcp.Cursor("")
		for page := 0; page < maxPages; page++ {
			req := mcp.ListPromptsRequest{}
			req.Params.Cursor = cursor
			res, err := s.Client().ListPromptsByPage(ctx, req)
			if err != nil {
				return err
			}
			for _, p := range res.Prompts {
				pi := PromptInfo{Name: p.Name, Description: p.Description, Arguments: []PromptArgument{}}
				for _, a := range p.Arguments {
					pi.Arguments = append(pi.Arguments, PromptArgument{Name: a.Name, Description: a.Description, Required: a.Required})
				}
				out = append(out, pi)
			}
			if cursor = res.NextCursor; cursor == "" {
				break
			}
		}
		return nil
	})
	return out, err
}

// GetPrompt returns the messages of the prompt name filled with args, each
// content capped; together they stay within OutputCap. The server's
// questions while it answers are declined (GetPromptFor).
func (g *Gateway) GetPrompt(ctx context.Context, name string, args map[string]string) ([]PromptMessage, error) {
	return g.GetPromptFor(ctx, name, args, nil)
}

// GetPromptFor is GetPrompt for the caller emit stands for: the server's
// questions while it answers (elicitation, sampling, roots: a 2026-07-28
// server's input_required rounds) go to emit as a tool call's do.
func (g *Gateway) GetPromptFor(ctx context.Context, name string, args map[string]string, emit tools.Emitter) ([]PromptMessage, error) {
	if name == "" {
		return nil, &tools.ArgumentError{Tool: "get_prompt", Problems: []string{"name is required"}}
	}
	var out []PromptMessage
	// A prompt whose server may put questions to the caller is bounded as
	// a tool call is, and not sent to another copy once sent: the caller
	// would be asked again.
	err := g.requestOn(ctx, "prompts/get", emit != nil, func(ctx context.Context, _ *view, conn *session.Conn, s *session.Session) error {
		req := mcp.GetPromptRequest{}
		req.Params.Name = name
		req.Params.Arguments = args
		res, err := conn.GetPrompt(ctx, s, req, UserFrom(ctx), emit)
		if err != nil {
			return err
		}
		b := &session.Budget{Left: g.opts.OutputCap}
		out = out[:0]
		for _, m := range res.Messages {
			item, _, _ := convertItem(m.Content, b)
			out = append(out, PromptMessage{Role: string(m.Role), Content: item})
		}
		return nil
	})
	return out, err
}

// request runs one request other than tools/call on the current session:
// admitted like a call (enter, the circuit), bounded by call_timeout,
// counted in the stats and the circuit, and its error named after the
// server and masked.
func (g *Gateway) request(ctx context.Context, op string, f func(ctx context.Context, s *session.Session) error) error {
	return g.requestOn(ctx, op, false, func(ctx context.Context, _ *view, _ *session.Conn, s *session.Session) error { return f(ctx, s) })
}

// requestOn is request, giving f the view whose session it runs on (the
// user's own of a per-user server). A request that may ask its caller
// (asking) is bounded by f as a tool call is (Conn.DoAsking), and a failed
// copy hands it to the next only when it was never sent; else the error
// is a *mayHaveRunError.
func (g *Gateway) requestOn(ctx context.Context, op string, asking bool, f func(ctx context.Context, v *view, conn *session.Conn, s *session.Session) error) error {
	if err := g.enter(op); err != nil {
		return err
	}
	defer g.leave()
	if cs := g.circuit(); cs.State == CircuitOpen {
		g.count(outcomeRefused)
		return g.circuitErr(cs)
	}
	var o outcome
	_, err := routed(ctx, g, func(v *view) (struct{}, error) {
		// What goes through here reads, and harms nothing when sent
		// twice, unless it may ask its caller something.
		var err error
		o, err = g.onCopies(ctx, v, func(c *copyState) (bool, error) {
			conn := v.conns[c.index]
			do := conn.Do
			if asking {
				do = conn.DoAsking
			}
			err := do(ctx, op, func(ctx context.Context, s *session.Session) error { return f(ctx, v, conn, s) })
			return !asking || session.NotSent(err), err
		})
		return struct{}{}, err
	})
	if err != nil && o == outcomeSuccess { // routing failed
		o = g.classify(ctx, err)
	}
	g.count(o)
	return err
}

// resourceAction runs the actions list_resources, read_resource,
// list_prompts and get_prompt of Run.
func (g *Gateway) resourceAction(ctx context.Context, action string, args map[string]any) (tools.Result, error) {
	meta := map[string]any{"server": g.cfg.Name, "action": action}
	start := time.Now()
	var res tools.Result
	var err error
	switch action {
	case "list_resources":
		var infos []ResourceInfo
		if infos, err = g.ListResources(ctx); err == nil {
			res = tools.Result{Name: action, Type: "table", Objects: capObjects(infos, g.opts.OutputCap, meta), Metadata: meta}
		}
	case "read_resource":
		uri, _ := args["uri"].(string)
		meta["uri"] = uri
		var cr *CallResult
		if cr, err = g.ReadResource(ctx, uri); err == nil {
			res = tools.Result{Name: action, Type: resultType(cr), Objects: cr.objects(), Metadata: meta, LLMText: cr.llmText}
		}
	case "list_prompts":
		var infos []PromptInfo
		if infos, err = g.ListPrompts(ctx); err == nil {
			res = tools.Result{Name: action, Type: "table", Objects: capObjects(infos, g.opts.OutputCap, meta), Metadata: meta}
		}
	case "get_prompt":
		name, _ := args["name"].(string)
		meta["prompt"] = name
		var msgs []PromptMessage
		if msgs, err = g.GetPrompt(ctx, name, stringArgs(args["arguments"])); err == nil {
			res = tools.Result{Name: action, Type: "table", Objects: capObjects(msgs, g.opts.OutputCap, meta), Metadata: meta}
		}
	}
	status := CallSuccess
	if err != nil {
		status = CallFailure
	}
	g.logCall(ctx, callMeta{}, action, "", status, time.Since(start), err)
	if err != nil {
		return g.failure(ctx, err)
	}
	return res, nil
}

// capObjects turns items into result objects within capBytes of JSON, noting
// in meta how many were left out.
func capObjects[T any](items []T, capBytes int, meta map[string]any) []map[string]any {
	out := make([]map[string]any, 0, len(items))
	size := 0
	for i, it := range items {
		raw, err := tools.Marshal(it)
		if err != nil {
			continue
		}
		if i > 0 && size+len(raw) > capBytes {
			meta["omitted"] = len(items) - i
			meta["note"] = fmt.Sprintf("%d of %d left out to stay within %d bytes", len(items)-i, len(items), capBytes)
			break
		}
		size += len(raw)
		var obj map[string]any
		if err := json.Unmarshal(raw, &obj); err == nil {
			out = append(out, obj)
		}
	}
	return out
}

// stringArgs reads a prompt's arguments: an object whose values are given
// as strings (others are formatted).
func stringArgs(v any) map[string]string {
	m, _ := v.(map[string]any)
	out := make(map[string]string, len(m))
	for k, val := range m {
		if s, ok := val.(string); ok {
			out[k] = s
		} else {
			out[k] = fmt.Sprint(val)
		}
	}
	return out
}
