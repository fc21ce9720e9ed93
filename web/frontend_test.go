package web

import (
	"strings"
	"testing"
	"testing/fstest"
)

// elysiaBuild is a stand-in for Elysia's static build (none of its files
// ship here): an index.html, a hashed Next.js chunk and an icon.
var elysiaBuild = fstest.MapFS{
	"index.html":                    {Data: []byte("<!DOCTYPE html><title>Elysia</title><script src=\"/_next/static/chunks/main-1.js\"></script>")},
	"_next/static/chunks/main-1.js": {Data: []byte("console.log('next');\n")},
	"_next/static/css/1.css":        {Data: []byte("body{}\n")},
	"icon.svg":                      {Data: []byte("<svg xmlns=\"http://www.w3.org/2000/svg\"/>")},
}

func TestFrontend(t *testing.T) {
	h := newHarness(t, &Options{Frontend: elysiaBuild, Keys: testKeys})
	tests := []struct {
		path       string
		wantStatus int
		wantType   string
	}{
		{"/", 200, "text/html"},
		{"/_next/static/chunks/main-1.js", 200, "javascript"},
		{"/_next/static/css/1.css", 200, "text/css"},
		{"/static/icon.svg", 200, "image/svg+xml"},
		// index.html links its icon at /icon.svg (Elysia's backend answers
		// that 404); the build's top-level files are served at the root.
		{"/icon.svg", 200, "image/svg+xml"},
		{"/icon.svg?d6c34577c7161f78", 200, "image/svg+xml"},
		{"/missing.svg", 404, "application/json"},
		{"/static/_next/static/chunks/main-1.js", 200, "javascript"},
		{"/static/index.html", 200, "text/html"},
		{"/_next/static/missing.js", 404, "application/json"},
		{"/static/../server.go", 404, "application/json"},
		{"/_next/", 404, "application/json"},
	}
	for _, tt := range tests {
		rec := h.do(t, "GET", tt.path, "") // no key: the files are open
		if rec.Code != tt.wantStatus || !strings.Contains(rec.Header().Get("Content-Type"), tt.wantType) {
			t.Errorf("GET %s: %d %q, want %d %s", tt.path, rec.Code, rec.Header().Get("Content-Type"), tt.wantStatus, tt.wantType)
		}
	}
}

func TestNoFrontendByDefault(t *testing.T) {
	h := newHarness(t, nil)
	for _, path := range []string{"/", "/_next/static/chunks/main-1.js", "/static/index.html"} {
		if rec := h.do(t, "GET", path, ""); rec.Code != 404 {
			t.Errorf("GET %s without --frontend: %d, want 404", path, rec.Code)
		}
	}
}
