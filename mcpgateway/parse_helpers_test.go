package mcpgateway

import (
	"testing"

	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// envMap returns a LookupEnv over m.
func envMap(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

// parseOK parses src as mcp.json with env as the environment and fails the
// test on any error.
func parseOK(t *testing.T, src string, env map[string]string) *mcpconfig.Config {
	t.Helper()
	cfg, err := mcpconfig.Parse("mcp.json", []byte(src), &mcpconfig.LoadOptions{LookupEnv: envMap(env), BaseDir: "/base"})
	if err != nil {
		t.Fatalf("Parse(%s) error: %v", src, err)
	}
	return cfg
}
