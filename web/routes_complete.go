package web

import (
	"context"
	"fmt"
	"net/http"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
)

// ServerCompleter is the optional part of Servers that passes MCP's
// completion/complete on to a server: suggestions for an argument of one
// of its prompts or resource templates. web checks for it with a type
// assertion; without it the route answers 501. Errors follow the rules of
// Servers.
type ServerCompleter interface {
	// Complete asks server name for the values that complete req's
	// argument, as far as the user has typed it.
	Complete(ctx context.Context, name string, req CompleteRequest) (Completion, error)
}

// Reference types of CompleteRef, as MCP names them.
const (
	// RefPrompt refers to a prompt by its name.
	RefPrompt = "ref/prompt"
	// RefResource refers to a resource template by its URI template.
	RefResource = "ref/resource"
)

// CompleteRequest is the body of POST /api/servers/:name/complete, shaped
// as MCP's completion/complete params.
type CompleteRequest struct {
	Ref      CompleteRef      `json:"ref"`
	Argument CompleteArgument `json:"argument"`
	Context  CompleteContext  `json:"context"`
}

// CompleteRef names what the argument belongs to: {"type": "ref/prompt",
// "name"} or {"type": "ref/resource", "uri"} (a URI template).
type CompleteRef struct {
	Type string `json:"type"`
	Name string `json:"name,omitempty"`
	URI  string `json:"uri,omitempty"`
}

// CompleteArgument is the argument being completed and what the user has
// typed of it.
type CompleteArgument struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// CompleteContext holds the values of the other arguments, which a
// server may use to narrow its suggestions.
type CompleteContext struct {
	Arguments map[string]string `json:"arguments,omitempty"`
}

// Completion is the answer of POST /api/servers/:name/complete: at most
// maxCompletionValues values, each at most maxCompletionValueLen bytes.
type Completion struct {
	Values []string `json:"values"`
	// Total is the number of values the server has, when it says.
	Total int `json:"total,omitempty"`
	// HasMore says that there are values beyond these.
	HasMore bool `json:"has_more"`
}

const (
	// maxCompletionValues is the most values a completion answer carries,
	// as MCP allows; more are cut, with has_more set.
	maxCompletionValues = 100
	// maxCompletionValueLen is the longest value, in bytes, a completion
	// answer carries: a suggestion longer than that is no suggestion for
	// a form field, and is dropped (has_more set).
	maxCompletionValueLen = 1024
	// maxCompleteContext is the most other arguments a request may send.
	maxCompleteContext = 64
)

// serverComplete serves POST /api/servers/:name/complete with a
// CompleteRequest, answering {"error", "completion"}.
func (s *Server) serverComplete(c *gin.Context) {
	var req CompleteRequest
	if err := s.decode(c, &req, false, "ref", "argument"); err != nil {
		s.fail(c, err, object{kv("completion", nil)})
		return
	}
	if err := req.check(); err != nil {
		s.fail(c, err, object{kv("completion", nil)})
		return
	}
	comp, has := s.deps.Servers.(ServerCompleter)
	if !has {
		s.fail(c, &requestError{http.StatusNotImplemented, "this service does not pass on MCP completions"}, object{kv("completion", nil)})
		return
	}
	got, err := comp.Complete(c.Request.Context(), c.Param("name"), req)
	if err != nil {
		s.failServer(c, err, object{kv("completion", nil)})
		return
	}
	writeJSON(c, http.StatusOK, ok(kv("completion", got.capped())))
}

// check refuses a request MCP would not carry.
func (r CompleteRequest) check() error {
	switch {
	case r.Ref.Type == RefPrompt && r.Ref.Name == "":
		return badRequest(`ref: a "ref/prompt" needs a name`)
	case r.Ref.Type == RefResource && r.Ref.URI == "":
		return badRequest(`ref: a "ref/resource" needs a uri`)
	case r.Ref.Type != RefPrompt && r.Ref.Type != RefResource:
		return badRequest(fmt.Sprintf(`ref.type: want "ref/prompt" or "ref/resource", got %q`, r.Ref.Type))
	case r.Argument.Name == "":
		return badRequest("argument.name: empty")
	case len(r.Context.Arguments) > maxCompleteContext:
		return badRequest(fmt.Sprintf("context.arguments: %d arguments, at most %d", len(r.Context.Arguments), maxCompleteContext))
	}
	return nil
}

// capped is c within the caps: at most maxCompletionValues values of at
// most maxCompletionValueLen valid UTF-8 bytes each, never null.
func (c Completion) capped() Completion {
	out := Completion{Values: make([]string, 0, min(len(c.Values), maxCompletionValues)), Total: c.Total, HasMore: c.HasMore}
	for _, v := range c.Values {
		if len(out.Values) == maxCompletionValues {
			out.HasMore = true
			break
		}
		if len(v) > maxCompletionValueLen || !utf8.ValidString(v) {
			out.HasMore = true
			continue
		}
		out.Values = append(out.Values, v)
	}
	return out
}
