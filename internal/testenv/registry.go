package testenv

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// RegistryModule is the official MCP Registry the tests run: its v1.7.9
// builds from the Go module proxy (v1.8.x does not).
const RegistryModule = "github.com/modelcontextprotocol/registry/cmd/registry@v1.7.9"

// registryEnv names a prebuilt registry binary (make test builds one).
const registryEnv = "ELYSIA_MCP_REGISTRY"

// buildRegistry installs RegistryModule into a temporary folder, once per
// test process.
var buildRegistry = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "elysia-mcp-registry-")
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // a cold build downloads its modules
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "install", RegistryModule)
	cmd.Env = append(os.Environ(), "GOBIN="+dir, "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go install %s: %v\n%s", RegistryModule, err, out)
	}
	return filepath.Join(dir, "registry"), nil
})

// MCPRegistryBinary returns the official registry's binary: $ELYSIA_MCP_REGISTRY
// when set, else a build of RegistryModule made once per test process. A
// build that fails (no Go module proxy) skips tb, or fails it under CI=true.
func MCPRegistryBinary(tb testing.TB) string {
	tb.Helper()
	Integration(tb)
	if p := os.Getenv(registryEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			tb.Fatalf("%s=%s: %v", registryEnv, p, err)
		}
		return p
	}
	bin, err := buildRegistry()
	if err != nil {
		Missing(tb, "the official MCP Registry does not build: %v", err)
	}
	return bin
}

// MCPRegistry starts the official MCP Registry on 127.0.0.1 with a
// database of its own in the test PostgreSQL (PostgresURL), seeded with
// seed (a JSON array of server.json documents) without checking the
// packages against npm, PyPI or Docker Hub, and returns its URL. The
// registry is stopped and its database dropped when tb ends. The test
// binary must register the "pgx" database/sql driver.
func MCPRegistry(tb testing.TB, seed []byte) string {
	tb.Helper()
	bin := MCPRegistryBinary(tb)
	pg := PostgresURL(tb)
	admin, err := sql.Open("pgx", pg)
	if err != nil {
		tb.Fatal(err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	db := "mcpregistry_" + hex.EncodeToString(b[:])
	if _, err := admin.ExecContext(tb.Context(), "CREATE DATABASE "+db); err != nil {
		_ = admin.Close() // best effort: the create error is the one to report
		tb.Fatalf("create the registry's database: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.ExecContext(ctx, "DROP DATABASE "+db+" WITH (FORCE)"); err != nil {
			tb.Errorf("drop database %s: %v", db, err)
		}
		if err := admin.Close(); err != nil {
			tb.Errorf("close admin connection: %v", err)
		}
	})
	u, err := url.Parse(pg)
	if err != nil {
		tb.Fatalf("%s: %v", postgresEnv, err)
	}
	u.Path = "/" + db
	seedFile := filepath.Join(tb.TempDir(), "seed.json")
	if err := os.WriteFile(seedFile, seed, 0o600); err != nil {
		tb.Fatal(err)
	}
	var key [32]byte
	_, _ = rand.Read(key[:])
	addr := fmt.Sprintf("127.0.0.1:%d", FreePort(tb))
	cmd := exec.Command(bin) //nolint:noctx // Start's cleanup owns the child; see Start
	cmd.Env = append(registryFreeEnv(),
		"MCP_REGISTRY_DATABASE_URL="+u.String(),
		"MCP_REGISTRY_SERVER_ADDRESS="+addr,
		"MCP_REGISTRY_SEED_FROM="+seedFile,
		"MCP_REGISTRY_ENABLE_REGISTRY_VALIDATION=false",
		"MCP_REGISTRY_JWT_PRIVATE_KEY="+hex.EncodeToString(key[:]),
	)
	Start(tb, cmd)
	base := "http://" + addr
	// The seed is imported before the server listens: once it answers,
	// the servers are in.
	WaitHTTP(tb, base+"/v0.1/health", 60*time.Second)
	return base
}

// registryFreeEnv is the environment without MCP_REGISTRY_* settings of
// the developer's own.
func registryFreeEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MCP_REGISTRY_") {
			out = append(out, kv)
		}
	}
	return out
}

// Names of the servers RegistrySeed publishes.
const (
	// SeedRemote is a remote server: Streamable HTTP and SSE, with a
	// required secret header.
	SeedRemote = "com.example/weather"
	// SeedEverything is server-everything from npm, at the version of
	// testdata/npm's lock file (latest) and at SeedEverythingOld.
	SeedEverything = "io.github.modelcontextprotocol/everything"
	// SeedSecret is a PyPI package with a required secret, a required
	// value with a default and one without (VAULT_NAMESPACE).
	SeedSecret = "io.github.example/vault"
	// SeedEverythingOld is the older version of SeedEverything.
	SeedEverythingOld = "2025.1.1"
)

// RegistrySeed returns the server.json documents MCPRegistry is seeded
// with in the tests: SeedRemote, SeedEverything (two versions) and
// SeedSecret.
func RegistrySeed(tb testing.TB) []byte {
	tb.Helper()
	everything := func(version string) string {
		return `{"$schema": "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
  "name": "` + SeedEverything + `", "title": "Everything", "description": "The MCP reference server with every feature", "version": "` + version + `",
  "repository": {"url": "https://github.com/modelcontextprotocol/servers", "source": "github"},
  "packages": [{"registryType": "npm", "registryBaseUrl": "https://registry.npmjs.org", "identifier": "@modelcontextprotocol/server-everything",
    "version": "` + version + `", "transport": {"type": "stdio"}, "packageArguments": [{"type": "positional", "value": "stdio"}]}]}`
	}
	return []byte(`[` + everything(EverythingVersion(tb)) + `,` + everything(SeedEverythingOld) + `,
 {"$schema": "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
  "name": "` + SeedRemote + `", "description": "Weather forecasts", "version": "1.2.0",
  "remotes": [
    {"type": "streamable-http", "url": "https://mcp.example.com/mcp",
     "headers": [{"name": "Authorization", "value": "Bearer {api_key}", "isRequired": true, "isSecret": true,
                  "variables": {"api_key": {"isRequired": true, "isSecret": true, "description": "Weather API key"}}}]},
    {"type": "sse", "url": "https://mcp.example.com/sse"}]},
 {"$schema": "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
  "name": "` + SeedSecret + `", "description": "Secrets from a vault", "version": "0.3.0",
  "packages": [{"registryType": "pypi", "registryBaseUrl": "https://pypi.org", "identifier": "mcp-vault", "version": "0.3.0", "transport": {"type": "stdio"},
    "environmentVariables": [
      {"name": "VAULT_TOKEN", "description": "Vault token", "isRequired": true, "isSecret": true},
      {"name": "VAULT_ADDR", "description": "Vault address", "isRequired": true, "default": "https://vault.example.com"},
      {"name": "VAULT_NAMESPACE", "description": "Vault namespace", "isRequired": true}]}]}
]`)
}

// EverythingVersion returns the version of server-everything that
// testdata/npm's lock file pins.
func EverythingVersion(tb testing.TB) string {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join(RepoRoot(), "testdata", "npm", "package-lock.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var lock struct {
		Packages map[string]struct {
			Version string `json:"version"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(data, &lock); err != nil {
		tb.Fatalf("testdata/npm/package-lock.json: %v", err)
	}
	v := lock.Packages["node_modules/@modelcontextprotocol/server-everything"].Version
	if v == "" {
		tb.Fatal("testdata/npm/package-lock.json pins no server-everything")
	}
	return v
}

// FakeRegistry is an MCP Registry for tests that need no PostgreSQL: it
// serves the v0.1 API as the official registry's OpenAPI document shapes
// it, from server.json documents given as text (so that a test can serve
// hostile ones). The first document of a name is its latest version.
type FakeRegistry struct {
	// URL is where it listens, on 127.0.0.1.
	URL string
	// PageSize is the most servers one page lists; 0 means 100.
	PageSize int

	servers []string

	mu       sync.Mutex // guards requests
	requests []string
}

// NewFakeRegistry starts a FakeRegistry serving servers, stopped when tb
// ends.
func NewFakeRegistry(tb testing.TB, servers ...string) *FakeRegistry {
	tb.Helper()
	f := &FakeRegistry{servers: servers}
	srv := httptest.NewServer(f)
	tb.Cleanup(srv.Close)
	f.URL = srv.URL
	return f
}

// Requests returns the request URIs served so far, in order.
func (f *FakeRegistry) Requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.requests)
}

// ServeHTTP implements http.Handler.
func (f *FakeRegistry) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.requests = append(f.requests, r.URL.RequestURI())
	f.mu.Unlock()
	type doc struct {
		text, name, version string
		latest              bool
	}
	var docs []doc
	seen := map[string]bool{}
	for _, s := range f.servers {
		var h struct{ Name, Version string }
		_ = json.Unmarshal([]byte(s), &h) // a hostile document may not decode: it is served all the same
		docs = append(docs, doc{s, h.Name, h.Version, !seen[h.Name]})
		seen[h.Name] = true
	}
	item := func(d doc) string {
		return fmt.Sprintf(`{"server": %s, "_meta": {"io.modelcontextprotocol.registry/official": {"status": "active", "isLatest": %t, "publishedAt": "2026-01-01T00:00:00Z"}}}`, d.text, d.latest)
	}
	w.Header().Set("Content-Type", "application/json")
	if rest, ok := strings.CutPrefix(r.URL.Path, "/v0.1/servers/"); ok {
		name, version, _ := strings.Cut(rest, "/versions/")
		for _, d := range docs {
			if d.name == name && (d.version == version || (version == "latest" && d.latest)) {
				_, _ = io.WriteString(w, item(d))
				return
			}
		}
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"title": "Not Found", "status": 404, "detail": "Server not found"}`)
		return
	}
	if r.URL.Path != "/v0.1/servers" {
		http.NotFound(w, r)
		return
	}
	q := r.URL.Query()
	var matched []doc
	for _, d := range docs {
		if strings.Contains(d.name, q.Get("search")) && (q.Get("version") != "latest" || d.latest) {
			matched = append(matched, d)
		}
	}
	size := f.PageSize
	if n, err := strconv.Atoi(q.Get("limit")); err == nil && n > 0 && (size == 0 || n < size) {
		size = n
	}
	if size == 0 {
		size = 100
	}
	start, _ := strconv.Atoi(q.Get("cursor"))
	start = min(max(start, 0), len(matched))
	end := min(start+size, len(matched))
	var items []string
	for _, d := range matched[start:end] {
		items = append(items, item(d))
	}
	next := ""
	if end < len(matched) {
		next = fmt.Sprintf(`, "nextCursor": "%d"`, end)
	}
	_, _ = fmt.Fprintf(w, `{"servers": [%s], "metadata": {"count": %d%s}}`, strings.Join(items, ","), len(items), next)
}
