package web

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"

	"github.com/gin-gonic/gin"
)

// DefaultPageUser is the user a browser opening / gets a conversation for
// when Options.PageUser is empty: cli, the default user of every surface
// of a keyless service (the CLI, mcp serve, keyless /mcp).
const DefaultPageUser = "cli"

// pageRoutes adds / for browsers (unless Elysia's frontend serves it) and
// GET /api/info, what the page shows about the service.
func (s *Server) pageRoutes(e *gin.Engine) {
	if s.frontend == nil {
		e.GET("/", s.rootRedirect)
	}
	e.GET("/api/info", s.requireKey, s.apiInfo)
}

// rootRedirect sends a browser asking for / to a new conversation of the
// page user; any other client gets the 404 every unknown route gets.
func (s *Server) rootRedirect(c *gin.Context) {
	if !strings.Contains(c.GetHeader("Accept"), "text/html") {
		s.fail(c, &requestError{http.StatusNotFound, "no route for GET /"}, nil)
		return
	}
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	c.Header("Cache-Control", "no-store")
	c.Redirect(http.StatusFound, "/tree/"+url.PathEscape(s.pageUser)+"/c-"+hex.EncodeToString(b[:]))
}

// apiInfo serves GET /api/info: the model that answers and whether the
// service asks for an API key, for the page's header.
func (s *Server) apiInfo(c *gin.Context) {
	model := s.model.Model
	if s.model.Provider != "" && model != "" {
		model = s.model.Provider + "/" + model
	}
	writeJSON(c, http.StatusOK, ok(kv("model", model), kv("provider", s.model.Provider), kv("auth", len(s.keys) > 0)))
}
