package ui

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

// Prefix is the URL path the assets are served under; index.html refers to
// them with absolute paths below it (/ui/app.js, /ui/style.css).
const Prefix = "/ui/"

// IndexName is the name of the page within FS.
const IndexName = "index.html"

//go:embed static
var static embed.FS

// FS returns the UI files (index.html, the .js modules, style.css) rooted at
// their folder, so "app.js" names /ui/app.js. The result is read-only and
// safe for concurrent use.
func FS() fs.FS {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		// fs.Sub fails only on an invalid path, which "static" is not.
		panic(err)
	}
	return sub
}

// Index returns the page for GET /tree/:user_id/:conversation_id. The page
// reads the user and conversation ids from its own URL, so one page serves
// every conversation. Callers must not modify the returned slice.
func Index() []byte {
	b, err := static.ReadFile("static/" + IndexName)
	if err != nil {
		// The file is embedded at build time; a missing one is a build bug.
		panic(err)
	}
	return b
}

// Handler serves the assets for requests whose path starts with Prefix
// (mount it at "/ui/*filepath"). Responses carry Cache-Control: no-cache so
// a new build shows at once, and nosniff so the modules' JavaScript type is
// trusted. It is safe for concurrent use.
func Handler() http.Handler {
	files := http.FileServerFS(FS())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, strings.TrimSuffix(Prefix, "/"))
		if name == "" || name == "/" || name == "/"+IndexName || strings.HasSuffix(name, "/") {
			// The page itself lives at /tree/...; no directory listings.
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		r2 := r.Clone(r.Context())
		r2.URL.Path = name
		r2.URL.RawPath = ""
		files.ServeHTTP(w, r2)
	})
}
