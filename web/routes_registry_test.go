package web

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/elysia-go/elysia/tree"
)

// fakeGallery is a Gallery over a fixed list; Add answers by server name.
type fakeGallery struct {
	mu       sync.Mutex
	searches [][]string
	adds     []GalleryAdd
}

func (g *fakeGallery) Search(_ context.Context, words []string, limit int) (GallerySearch, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.searches = append(g.searches, words)
	if len(words) > 0 && words[0] == "down" {
		return GallerySearch{}, errors.New("registry unreachable: the registry at http://127.0.0.1:9 refused the connection")
	}
	return GallerySearch{Registry: "http://registry.test", Servers: []GalleryServer{{Name: "io.github.x/weather", Version: "1.0.0", Runs: []string{"remote"}, Entry: "weather"}}[:min(limit, 1)]}, nil
}

func (g *fakeGallery) Add(_ context.Context, req GalleryAdd) (GalleryAdded, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.adds = append(g.adds, req)
	switch req.Server {
	case "io.github.x/db":
		if req.Values["DB_HOST"] == "" {
			return GalleryAdded{}, &MissingValuesError{Server: req.Server, Values: []GalleryValue{{Name: "DB_HOST", Kind: "environment variable", Description: "Database host"}}}
		}
	case "io.github.x/todo":
		return GalleryAdded{}, fmt.Errorf("mcp.json: server %q: %w", "todo", ErrEntryExists)
	case "io.github.evil/url":
		return GalleryAdded{}, fmt.Errorf("refused: remotes[0].url: holds \"${\": %w", ErrBadEntry)
	case "io.github.x/nope":
		return GalleryAdded{}, fmt.Errorf("server %q: not in the registry: %w", req.Server, tree.ErrNotFound)
	}
	return GalleryAdded{Name: "db", ToolName: "mcp_db", Server: req.Server, Version: "1.0.0", From: "pypi", Transport: "stdio", Command: "uvx"}, nil
}

// TestRegistryRoutes: the gallery's search and add are admin only on a
// keyed service; bad words and limits are refused before the registry is
// asked; each error of Add has its status, a missing value its name.
func TestRegistryRoutes(t *testing.T) {
	h := newHarness(t, &Options{Keys: testKeys})
	g := &fakeGallery{}
	h.srv = New(Deps{Trees: h.trees, Servers: h.servers, Store: h.store, Gallery: g}, &Options{Keys: testKeys, Assets: testAssets})
	admin := []string{"Authorization", "Bearer key-admin"}
	alice := []string{"Authorization", "Bearer key-alice"}
	for _, tt := range []struct {
		method, path, body string
		headers            []string
		want               int
		has                string
	}{
		{"GET", "/api/registry/servers?q=weather", "", nil, 401, "API key"},
		{"GET", "/api/registry/servers?q=weather", "", alice, 403, "admin"},
		{"POST", "/api/registry/servers", `{"server": "io.github.x/db"}`, alice, 403, "admin"},
		{"GET", "/api/registry/servers?q=weather+city", "", admin, 200, `"servers":[{"name":"io.github.x/weather"`},
		{"GET", "/api/registry/servers?q=down", "", admin, 502, "refused the connection"},
		{"GET", "/api/registry/servers?q=a+b+c+d+e+f", "", admin, 400, "at most 5 words"},
		{"GET", "/api/registry/servers?q=%1b%5b2J", "", admin, 400, "control characters"},
		{"GET", "/api/registry/servers?limit=0", "", admin, 400, "limit"},
		{"GET", "/api/registry/servers?limit=x", "", admin, 400, "limit"},
		{"POST", "/api/registry/servers", `{}`, admin, 400, "server"},
		{"POST", "/api/registry/servers", `{"server": "io.github.x/db"}`, admin, 422, `"missing":[{"name":"DB_HOST","kind":"environment variable","description":"Database host"}]`},
		{"POST", "/api/registry/servers", `{"server": "io.github.x/db", "values": {"DB_HOST": "h"}}`, admin, 201, `"added":{"name":"db","tool_name":"mcp_db"`},
		{"POST", "/api/registry/servers", `{"server": "io.github.x/todo"}`, admin, 409, "already has a server"},
		{"POST", "/api/registry/servers", `{"server": "io.github.evil/url"}`, admin, 422, "remotes[0].url"},
		{"POST", "/api/registry/servers", `{"server": "io.github.x/nope"}`, admin, 404, "not in the registry"},
	} {
		rec := h.do(t, tt.method, tt.path, tt.body, tt.headers...)
		if rec.Code != tt.want || !strings.Contains(rec.Body.String(), tt.has) {
			t.Errorf("%s %s %s: %d %s; want %d with %q", tt.method, tt.path, tt.body, rec.Code, rec.Body, tt.want, tt.has)
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.searches) != 2 || strings.Join(g.searches[0], " ") != "weather city" {
		t.Errorf("searches sent to the gallery: %q; want the two admin searches with good words", g.searches)
	}
	if len(g.adds) != 5 {
		t.Errorf("%d adds reached the gallery; want 5 (none from alice or without a server)", len(g.adds))
	}

	// A service without a gallery says so.
	h.srv = New(Deps{Trees: h.trees, Servers: h.servers, Store: h.store}, &Options{Keys: testKeys, Assets: testAssets})
	if rec := h.do(t, "GET", "/api/registry/servers", "", admin...); rec.Code != 404 || !strings.Contains(rec.Body.String(), "no registry gallery") {
		t.Errorf("without a gallery: %d %s", rec.Code, rec.Body)
	}
}
