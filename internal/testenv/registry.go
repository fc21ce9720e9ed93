package testenv

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
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
	base := PostgresURL(tb)
	admin, err := sql.Open("pgx", base)
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
	u, err := url.Parse(base)
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
	url := "http://" + addr
	// The seed is imported before the server listens: once it answers,
	// the servers are in.
	WaitHTTP(tb, url+"/v0.1/health", 60*time.Second)
	return url
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
