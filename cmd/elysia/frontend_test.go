package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeElysiaFrontend serves a stand-in for Elysia's static build with
// --frontend and walks what its pages load first: the page, a Next.js
// chunk, /init/user, the saved conversations, the collections and the
// models, none of them a 404.
func TestServeElysiaFrontend(t *testing.T) {
	t.Parallel()
	build := t.TempDir()
	for name, body := range map[string]string{
		"index.html":                    "<!DOCTYPE html><title>Elysia</title>",
		"_next/static/chunks/main-1.js": "console.log('next')",
	} {
		p := filepath.Join(build, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := startService(t, serveOptions{Args: []string{"--frontend", build}})
	for path, want := range map[string]string{"/": "<title>Elysia</title>", "/_next/static/chunks/main-1.js": "next", "/static/index.html": "Elysia"} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, s.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), want) {
			t.Errorf("GET %s: %d %q, want 200 with %q", path, resp.StatusCode, b, want)
		}
	}
	code, body := do(t, http.MethodPost, s.URL+"/init/user/alice", "", nil)
	wantStatus(t, "POST /init/user/alice", code, body, http.StatusOK)
	if _, ok := body["frontend_config"].(map[string]any); !ok {
		t.Errorf("init/user lacks frontend_config: %v", body)
	}
	for _, path := range []string{"/db/alice/saved_trees", "/collections/alice/list", "/user/config/models", "/user/config/alice/list", "/feedback/metadata/alice"} {
		code, body := do(t, http.MethodGet, s.URL+path, "", nil)
		wantStatus(t, "GET "+path, code, body, http.StatusOK)
	}
}

// TestServeFrontendWithoutIndex refuses a folder that is not a build.
func TestServeFrontendWithoutIndex(t *testing.T) {
	t.Parallel()
	code, _, stderr := runCLI(t, t.TempDir(), nil, "serve", "--frontend", t.TempDir(), "--addr", "127.0.0.1:0")
	if code != 2 || !strings.Contains(stderr, "index.html") {
		t.Errorf("serve --frontend of an empty folder: exit %d, stderr %q; want 2 naming index.html", code, stderr)
	}
}

// TestServeFrontendStaysInItsFolder: --frontend DIR serves the files in
// DIR only: a symlink in the build to a file outside it, to a folder
// outside it, and the dotfiles in it (.env, .git/config, at /.env too) are
// all 404, while a symlink to a file inside the build is served.
func TestServeFrontendStaysInItsFolder(t *testing.T) {
	t.Parallel()
	build, outside := t.TempDir(), t.TempDir()
	for name, body := range map[string]string{
		filepath.Join(build, "index.html"):    "<!DOCTYPE html><title>Elysia</title>",
		filepath.Join(build, ".env"):          "OPENAI_API_KEY=sk-dotenv-secret",
		filepath.Join(build, ".git/config"):   "[remote] url = https://token@example.com",
		filepath.Join(outside, "secret.txt"):  "outside-secret",
		filepath.Join(outside, "dir/page.js"): "outside-secret",
	} {
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"leak.txt":   filepath.Join(outside, "secret.txt"),
		"leakdir":    filepath.Join(outside, "dir"),
		"alias.html": "index.html",
	} {
		if err := os.Symlink(target, filepath.Join(build, link)); err != nil {
			t.Fatal(err)
		}
	}
	s := startService(t, serveOptions{Args: []string{"--frontend", build}})
	get := func(path string) (int, string) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, s.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, path := range []string{"/static/leak.txt", "/leak.txt", "/static/leakdir/page.js", "/.env", "/static/.env", "/static/.git/config"} {
		if code, body := get(path); code != http.StatusNotFound || strings.Contains(body, "secret") || strings.Contains(body, "token") {
			t.Errorf("GET %s: %d %q, want 404", path, code, body)
		}
	}
	if code, body := get("/static/alias.html"); code != http.StatusOK || !strings.Contains(body, "Elysia") {
		t.Errorf("GET a symlink to a file inside the build: %d %q, want 200", code, body)
	}
}
