package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode"

	"github.com/gin-gonic/gin"
)

// Gallery is the panel's "Add a server": it finds servers in an MCP
// registry and writes one's entry into mcp.json, as elysia mcp search and
// elysia mcp add do (the running service then picks the entry up like any
// edit of the file). cmd satisfies it over mcpregistry. Safe for concurrent
// use.
//
// Errors: a server or version the registry does not have matches
// tree.ErrNotFound; a name mcp.json already has, ErrEntryExists; a
// server.json that cannot be written safely, or a bad name or value,
// ErrBadEntry; required values not given, a *MissingValuesError. Anything
// else is the registry's failure (502), its text shown: it must name the
// registry and say what failed.
type Gallery interface {
	// Search returns the latest version of the servers whose name, title
	// or description holds every word, at most limit of them.
	Search(ctx context.Context, words []string, limit int) (GallerySearch, error)
	// Add writes the entry of one server into mcp.json.
	Add(ctx context.Context, req GalleryAdd) (GalleryAdded, error)
}

// ErrEntryExists is matched by the error of Gallery.Add when mcp.json
// already has a server of the entry's name; nothing is overwritten. It
// maps to 409.
var ErrEntryExists = errors.New("mcp.json already has a server of that name")

// ErrBadEntry is matched by the error of Gallery.Add for a server that
// cannot be added as asked: a server.json with a hostile or malformed
// field, a bad entry name, a value outside its choices. It maps to 422.
var ErrBadEntry = errors.New("cannot be added")

// MissingValuesError is the error of Gallery.Add when the server needs
// values that have no default and were not given: the answer (422) names
// each, so that a form can ask for them.
type MissingValuesError struct {
	// Server is the server's name in the registry.
	Server string
	// Values are what is missing, in order.
	Values []GalleryValue
}

func (e *MissingValuesError) Error() string {
	names := make([]string, len(e.Values))
	for i, v := range e.Values {
		names[i] = v.Kind + " " + v.Name
	}
	return fmt.Sprintf("%s needs a value without a default for: %s; give them in \"values\" (by name)", e.Server, strings.Join(names, ", "))
}

// GallerySearch is the body of GET /api/registry/servers.
type GallerySearch struct {
	// Registry is the registry's URL.
	Registry string `json:"registry"`
	// Servers are the matches, in the registry's order. Nil is sent as [].
	Servers []GalleryServer `json:"servers"`
}

// GalleryServer is one server of a registry search.
type GalleryServer struct {
	// Name is the server's name in the registry ("io.github.user/weather").
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description"`
	Version     string `json:"version"`
	// Status is "active", "deprecated" or "deleted" ("" when the registry
	// does not say); StatusMessage may say why.
	Status        string `json:"status,omitempty"`
	StatusMessage string `json:"status_message,omitempty"`
	// Runs says how it can be run: "remote", "npm", "pypi", "oci", ...
	Runs []string `json:"runs"`
	// WebsiteURL and RepositoryURL are links the server.json gives, or "".
	WebsiteURL    string `json:"website_url,omitempty"`
	RepositoryURL string `json:"repository_url,omitempty"`
	// Entry is the name its entry gets in mcp.json by default; InConfig
	// tells whether mcp.json already has a server of that name.
	Entry    string `json:"entry"`
	InConfig bool   `json:"in_config"`
}

// GalleryAdd is the body of POST /api/registry/servers.
type GalleryAdd struct {
	// Server is the server's name in the registry; required.
	Server string `json:"server"`
	// Version is the version to add; "" means the latest.
	Version string `json:"version,omitempty"`
	// Name is the entry's name in mcp.json; "" means the default (the
	// part of Server after the slash).
	Name string `json:"name,omitempty"`
	// Values gives values by name (an environment variable's, a header's,
	// an argument's or a {variable}'s), as elysia mcp add --set does.
	Values map[string]string `json:"values,omitempty"`
	// PerUserSecrets makes each secret a ${user:...} secret every user
	// sets, not an ${input:...} the operator gives.
	PerUserSecrets bool `json:"per_user_secrets,omitempty"`
}

// GalleryValue is a value a server needs.
type GalleryValue struct {
	// Name is how GalleryAdd.Values names it.
	Name string `json:"name"`
	// Kind is "environment variable", "header", "argument" or "variable".
	Kind        string   `json:"kind"`
	Description string   `json:"description,omitempty"`
	Choices     []string `json:"choices,omitempty"`
	Placeholder string   `json:"placeholder,omitempty"`
}

// GalleryAdded is the body of a successful POST /api/registry/servers: the
// entry written, secrets as the references the entry holds.
type GalleryAdded struct {
	// Name is the entry's name in mcp.json; ToolName its gateway's.
	Name     string `json:"name"`
	ToolName string `json:"tool_name"`
	// ConfigFile is the mcp.json written.
	ConfigFile string `json:"config_file"`
	// Server and Version say what was added from the registry.
	Server  string `json:"server"`
	Version string `json:"version"`
	// From is "remote streamable-http", "remote sse", "npm", "pypi" or "oci".
	From      string   `json:"from"`
	Transport string   `json:"transport"`
	Command   string   `json:"command,omitempty"`
	Args      []string `json:"args,omitempty"`
	URL       string   `json:"url,omitempty"`
	// Inputs are the ${input:...} values the operator gives (each in the
	// environment variable Env) before the server can run.
	Inputs []GalleryInput `json:"inputs,omitempty"`
	// UserSecrets name the ${user:...} secrets each user sets.
	UserSecrets []string `json:"user_secrets,omitempty"`
	// Skipped names the optional values left out.
	Skipped []string `json:"skipped,omitempty"`
	// Warning says what the registry says against the version (deprecated,
	// deleted), or "".
	Warning string `json:"warning,omitempty"`
}

// GalleryInput is an ${input:ID} an added entry needs.
type GalleryInput struct {
	ID          string `json:"id"`
	Description string `json:"description,omitempty"`
	// Env is the environment variable that gives it: ELYSIA_INPUT_<ID>.
	Env string `json:"env"`
}

// Bounds of a gallery search.
const (
	maxGalleryWords = 5
	maxGalleryLimit = 100
	// defaultGalleryLimit is how many servers a search without limit shows.
	defaultGalleryLimit = 30
)

// gallery returns the Gallery, or answers 404 when the service has none.
func (s *Server) gallery(c *gin.Context) (Gallery, bool) {
	if s.deps.Gallery == nil {
		s.fail(c, &requestError{http.StatusNotFound, "this service has no registry gallery"}, nil)
		return nil, false
	}
	return s.deps.Gallery, true
}

// registrySearch serves GET /api/registry/servers?q=WORDS&limit=N (admin
// only on a keyed service).
func (s *Server) registrySearch(c *gin.Context) {
	g, has := s.gallery(c)
	if !has {
		return
	}
	q := c.Query("q")
	if strings.ContainsFunc(q, unicode.IsControl) {
		s.fail(c, badRequest("q: search words must not hold control characters"), nil)
		return
	}
	words := strings.Fields(q)
	if len(words) > maxGalleryWords {
		s.fail(c, badRequest(fmt.Sprintf("q: at most %d words", maxGalleryWords)), nil)
		return
	}
	limit := defaultGalleryLimit
	if l := c.Query("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > maxGalleryLimit {
			s.fail(c, badRequest(fmt.Sprintf("limit: want a number from 1 to %d", maxGalleryLimit)), nil)
			return
		}
		limit = n
	}
	res, err := g.Search(c.Request.Context(), words, limit)
	if err != nil {
		s.failGallery(c, err)
		return
	}
	if res.Servers == nil {
		res.Servers = []GalleryServer{}
	}
	writeJSON(c, http.StatusOK, ok(kv("registry", res.Registry), kv("servers", res.Servers)))
}

// registryAdd serves POST /api/registry/servers (admin only on a keyed
// service).
func (s *Server) registryAdd(c *gin.Context) {
	g, has := s.gallery(c)
	if !has {
		return
	}
	var body GalleryAdd
	if err := s.decode(c, &body, false, "server"); err != nil {
		s.fail(c, err, nil)
		return
	}
	if strings.TrimSpace(body.Server) == "" {
		s.fail(c, badRequest(`"server" is required: the server's name in the registry`), nil)
		return
	}
	added, err := g.Add(c.Request.Context(), body)
	if err != nil {
		s.failGallery(c, err)
		return
	}
	writeJSON(c, http.StatusCreated, ok(kv("added", added)))
}

// failGallery answers a Gallery error with its status (see Gallery).
func (s *Server) failGallery(c *gin.Context, err error) {
	var mv *MissingValuesError
	switch {
	case errors.As(err, &mv):
		s.failStatus(c, http.StatusUnprocessableEntity, err, object{kv("missing", mv.Values)})
	case errors.Is(err, ErrEntryExists):
		s.failStatus(c, http.StatusConflict, err, nil)
	case errors.Is(err, ErrBadEntry):
		s.failStatus(c, http.StatusUnprocessableEntity, err, nil)
	default:
		s.failServer(c, err, nil)
	}
}
