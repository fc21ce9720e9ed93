package web

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
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

// TestFrontendServesNoDotfiles: a build folder that also holds a .env, a
// .git/config and dotted folders serves none of them, by any route (the
// top-level /.env included), and only regular files: a named pipe or a
// folder is a 404 too.
func TestFrontendServesNoDotfiles(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"index.html":                    "<!DOCTYPE html><title>Elysia</title>",
		".env":                          "OPENAI_API_KEY=sk-dotenv-secret",
		".git/config":                   "[remote] url = https://token@example.com",
		"_next/.cache/x.js":             "hidden",
		"_next/static/chunks/main-1.js": "console.log('next')",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe.js"), 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = root.Close() })
	h := newHarness(t, &Options{Frontend: root.FS(), Keys: testKeys})
	for _, path := range []string{
		"/.env", "/static/.env", "/static/.git/config", "/_next/.cache/x.js", "/static/_next/.cache/x.js",
		"/static/%2eenv", "/static/pipe.js", "/static/_next", "/static/.git/",
	} {
		rec := h.do(t, "GET", path, "")
		if rec.Code != 404 || strings.Contains(rec.Body.String(), "secret") || strings.Contains(rec.Body.String(), "token") {
			t.Errorf("GET %s: %d %q, want 404", path, rec.Code, rec.Body.String())
		}
	}
	if rec := h.do(t, "GET", "/static/_next/static/chunks/main-1.js", ""); rec.Code != 200 {
		t.Errorf("GET a regular file of the build: %d, want 200", rec.Code)
	}
}
