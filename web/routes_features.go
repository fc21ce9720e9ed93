package web

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"
)

// ServerFeatures is the optional part of Servers for what MCP servers offer
// beyond tools: resources, prompts and their log. web checks for it with a
// type assertion; without it the routes answer 501. Errors follow the rules
// of Servers. The values are web's own types (dto.go), the routes' wire
// format.
type ServerFeatures interface {
	// Resources lists the server's resources and resource templates.
	Resources(ctx context.Context, name string) ([]ResourceInfo, error)
	// ReadResource reads one resource, capped like an execute result.
	ReadResource(ctx context.Context, name, uri string) (ExecuteResult, error)
	// Prompts lists the server's prompts with their arguments.
	Prompts(ctx context.Context, name string) ([]PromptInfo, error)
	// GetPrompt returns the messages of one prompt filled with args.
	GetPrompt(ctx context.Context, name, prompt string, args map[string]string) ([]PromptMessage, error)
	// Logs returns the server's last log messages, oldest first, that
	// the key of ctx (Principal) may see: an admin key (and every request
	// without keys) all of them, a user's key only that user's.
	Logs(ctx context.Context, name string) ([]LogEntry, error)
}

// features returns the ServerFeatures of the servers, or answers 501.
func (s *Server) features(c *gin.Context, field string) (ServerFeatures, bool) {
	f, has := s.deps.Servers.(ServerFeatures)
	if !has {
		s.fail(c, &requestError{http.StatusNotImplemented, "this service does not expose MCP resources, prompts or logs"}, object{kv(field, nil)})
	}
	return f, has
}

// serverResources serves POST /api/servers/:name/resources.
func (s *Server) serverResources(c *gin.Context) {
	s.serveFeature(c, "resources", func(ctx context.Context, f ServerFeatures) (any, error) {
		return f.Resources(ctx, c.Param("name"))
	})
}

// serverReadResource serves POST /api/servers/:name/resources/read with
// {"uri"}.
func (s *Server) serverReadResource(c *gin.Context) {
	var body struct {
		URI string `json:"uri"`
	}
	if err := s.decode(c, &body, false, "uri"); err != nil {
		s.fail(c, err, object{kv("result", nil)})
		return
	}
	s.serveFeature(c, "result", func(ctx context.Context, f ServerFeatures) (any, error) {
		return f.ReadResource(ctx, c.Param("name"), body.URI)
	})
}

// serverPrompts serves POST /api/servers/:name/prompts.
func (s *Server) serverPrompts(c *gin.Context) {
	s.serveFeature(c, "prompts", func(ctx context.Context, f ServerFeatures) (any, error) {
		return f.Prompts(ctx, c.Param("name"))
	})
}

// serverGetPrompt serves POST /api/servers/:name/prompts/get with
// {"name", "arguments"}.
func (s *Server) serverGetPrompt(c *gin.Context) {
	var body struct {
		Name      string            `json:"name"`
		Arguments map[string]string `json:"arguments"`
	}
	if err := s.decode(c, &body, false, "name"); err != nil {
		s.fail(c, err, object{kv("messages", nil)})
		return
	}
	s.serveFeature(c, "messages", func(ctx context.Context, f ServerFeatures) (any, error) {
		return f.GetPrompt(ctx, c.Param("name"), body.Name, body.Arguments)
	})
}

// serverLogs serves GET /api/servers/:name/logs.
func (s *Server) serverLogs(c *gin.Context) {
	s.serveFeature(c, "logs", func(ctx context.Context, f ServerFeatures) (any, error) {
		return f.Logs(ctx, c.Param("name"))
	})
}

// serveFeature answers {"error", field: run's value}, or the failure as the
// server routes do.
func (s *Server) serveFeature(c *gin.Context, field string, run func(context.Context, ServerFeatures) (any, error)) {
	f, has := s.features(c, field)
	if !has {
		return
	}
	v, err := run(c.Request.Context(), f)
	if err != nil {
		s.failServer(c, err, object{kv(field, nil)})
		return
	}
	writeJSON(c, http.StatusOK, ok(kv(field, v)))
}
