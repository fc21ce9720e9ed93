package web

import (
	"io/fs"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"
)

// indexFile is the UI's page shell.
const indexFile = "index.html"

// uiAsset serves GET /ui/*filepath from Options.Assets. Assets need no key:
// they hold no user data.
func (s *Server) uiAsset(c *gin.Context) {
	if s.assets == nil {
		s.fail(c, &requestError{http.StatusNotFound, "web UI not available"}, nil)
		return
	}
	// The page itself lives at /tree/...: no page or listing here.
	name := strings.TrimPrefix(c.Param("filepath"), "/")
	if name == indexFile || !fs.ValidPath(name) {
		s.fail(c, &requestError{http.StatusNotFound, "no such file: /ui/" + name}, nil)
		return
	}
	if fi, err := fs.Stat(s.assets, name); err != nil || fi.IsDir() {
		s.fail(c, &requestError{http.StatusNotFound, "no such file: /ui/" + name}, nil)
		return
	}
	c.Header("Cache-Control", "no-cache") // a new build shows at once
	c.Header("X-Content-Type-Options", "nosniff")
	http.ServeFileFS(c.Writer, c.Request, s.assets, name)
}

// servePage serves the UI's index.html. The page itself finds the user and
// conversation in its URL and fetches the tree with the user's key.
func (s *Server) servePage(c *gin.Context) {
	b, err := fs.ReadFile(s.assets, indexFile)
	if err != nil {
		s.fail(c, err, nil)
		return
	}
	c.Header("Cache-Control", "no-cache")
	c.Header("X-Content-Type-Options", "nosniff")
	c.Data(http.StatusOK, "text/html; charset=utf-8", b)
}

// prefersHTML reports whether an Accept header ranks text/html above
// application/json, as a browser's navigation does
// ("text/html,...,*/*;q=0.8") and fetch's default ("*/*") does not.
func prefersHTML(accept string) bool {
	var htmlQ, jsonQ float64
	for part := range strings.SplitSeq(accept, ",") {
		mediaType, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		mediaType = strings.ToLower(strings.TrimSpace(mediaType))
		q := 1.0
		for p := range strings.SplitSeq(params, ";") {
			k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
			if ok && strings.EqualFold(strings.TrimSpace(k), "q") {
				if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
					q = f
				}
			}
		}
		switch mediaType {
		case "text/html":
			htmlQ = max(htmlQ, q)
		case "application/json", "application/*", "*/*":
			jsonQ = max(jsonQ, q)
		}
	}
	return htmlQ > jsonQ
}
