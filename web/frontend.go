package web

import (
	"bytes"
	"io"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/elysia-go/elysia/web/browsersafety"
)

// frontendRoutes serves Options.Frontend, a static build of Elysia's own
// frontend, where Elysia's backend serves it: its index.html at /, its
// Next.js assets at /_next/* and the whole build at /static/*. Its
// top-level files (icon.svg, logo.svg) are also served at /<name>: the
// page's <link rel="icon" href="/icon.svg"> asks for one there, which
// Elysia's backend answers 404. Like the project's UI assets, the files
// need no key: they hold no user data.
func (s *Server) frontendRoutes(e *gin.Engine) {
	if s.frontend == nil {
		return
	}
	top := topLevelFiles(s.frontend)
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		e.Handle(method, "/", s.frontendFile(func(*gin.Context) string { return indexFile }))
		e.Handle(method, "/_next/*filepath", s.frontendFile(func(c *gin.Context) string { return "_next" + c.Param("filepath") }))
		e.Handle(method, "/static/*filepath", s.frontendFile(func(c *gin.Context) string {
			return strings.TrimPrefix(c.Param("filepath"), "/")
		}))
		for _, name := range top {
			e.Handle(method, "/"+name, s.frontendFile(func(*gin.Context) string { return name }))
		}
	}
}

// topLevelFiles lists the files at the root of a build that can be routes
// of their own: regular files whose names have an extension (so that no
// route of the service, none of which has a dot, is taken) and hold no
// character gin reads as a parameter.
func topLevelFiles(build fs.FS) []string {
	entries, err := fs.ReadDir(build, ".")
	if err != nil {
		return nil
	}
	var out []string
	for _, d := range entries {
		name := d.Name()
		if !d.Type().IsRegular() || hidden(name) || !strings.Contains(name, ".") || strings.ContainsAny(name, ":*?#%/\\ ") {
			continue
		}
		out = append(out, name)
	}
	return out
}

// hidden reports whether a path of the build has a segment starting with
// ".": dotfiles and dot folders (.env, .git/config) are never served, by
// any route.
func hidden(name string) bool {
	for seg := range strings.SplitSeq(name, "/") {
		if strings.HasPrefix(seg, ".") {
			return true
		}
	}
	return false
}

// frontendFile serves the file of Options.Frontend that name picks from
// the request. Only regular files are served: a directory, a named pipe, a
// dotfile or anything under a dot folder, a path outside the build or a
// missing file is a 404.
func (s *Server) frontendFile(name func(*gin.Context) string) gin.HandlerFunc {
	return func(c *gin.Context) {
		n := name(c)
		if n == "" {
			n = indexFile
		}
		if !fs.ValidPath(n) || hidden(n) {
			s.fail(c, &requestError{http.StatusNotFound, "no such file: " + c.Request.URL.Path}, nil)
			return
		}
		if fi, err := fs.Stat(s.frontend, n); err != nil || !fi.Mode().IsRegular() {
			s.fail(c, &requestError{http.StatusNotFound, "no such file: " + c.Request.URL.Path}, nil)
			return
		}
		c.Header("X-Content-Type-Options", "nosniff")
		if strings.HasSuffix(n, ".html") {
			c.Header("Content-Security-Policy", frontendCSP)
		}
		if strings.HasPrefix(n, "_next/static/") {
			c.Header("Cache-Control", "public, max-age=31536000, immutable") // content-hashed names
		} else {
			c.Header("Cache-Control", "no-cache")
		}
		f, err := s.frontend.Open(n)
		if err != nil {
			s.fail(c, &requestError{http.StatusNotFound, "no such file: " + c.Request.URL.Path}, nil)
			return
		}
		defer func() { _ = f.Close() }() // read-only
		rs, ok := f.(io.ReadSeeker)
		if !ok {
			b, err := io.ReadAll(f)
			if err != nil {
				s.fail(c, err, nil)
				return
			}
			rs = bytes.NewReader(b)
		}
		// ServeContent, not ServeFileFS, which would redirect
		// /static/index.html to /static/.
		http.ServeContent(c.Writer, c.Request, n, time.Time{}, rs)
	}
}

// frontendOverride is what Elysia's Next.js build needs beyond browsersafety.PageCSP.
// Its page inserts an inline script at run time (Google Analytics' init,
// which its start-up waits for), so no hash list can allow it: its
// scripts get 'unsafe-inline', but still no eval, no other host, no
// connection but to this origin, no framing, no <object> and no <base>.
// Its components inject <style> elements (scroll locks, toasts), its code
// highlighter starts a worker, and its WebGL scene loads blob: textures.
var frontendOverride = map[string]string{
	"script-src": "'self' 'unsafe-inline'",
	"style-src":  "'self' 'unsafe-inline'",
	"img-src":    "'self' data: blob:",
	"media-src":  "'self' data: blob:",
	"font-src":   "'self' data:",
	"worker-src": "'self' blob:",
}

// frontendCSP is the Content-Security-Policy of the frontend build's
// pages.
var frontendCSP = browsersafety.PageCSP(nil, frontendOverride)
