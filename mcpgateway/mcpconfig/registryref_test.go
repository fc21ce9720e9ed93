package mcpconfig

import (
	"errors"
	"strings"
	"testing"
)

// TestRegistryRef: the "registry" block `elysia mcp add` writes is read
// without a warning, in every dialect.
func TestRegistryRef(t *testing.T) {
	for _, src := range []string{
		`{"servers": {"w": {"url": "https://h/mcp", "registry": {"name": "com.example/w", "version": "1.0.0"}}}}`,
		`{"mcpServers": {"w": {"url": "https://h/mcp", "registry": {"name": "com.example/w", "version": "1.0.0"}}}}`,
		`[{"name": "w", "url": "https://h/mcp", "registry": {"name": "com.example/w", "version": "1.0.0"}}]`,
	} {
		cfg := parseOK(t, src, nil)
		if len(cfg.Warnings) > 0 {
			t.Errorf("Parse(%s) warnings: %v", src, cfg.Warnings)
		}
		if got, want := cfg.Servers[0].Registry, (RegistryRef{Name: "com.example/w", Version: "1.0.0"}); got == nil || *got != want {
			t.Errorf("Parse(%s).Registry = %v; want %v", src, got, want)
		}
	}
	if s := parseOK(t, `{"servers": {"a": {"command": "x"}}}`, nil).Servers[0]; s.Registry != nil {
		t.Errorf("an entry written by hand has Registry %v; want nil", s.Registry)
	}
}

func TestRegistryRefInvalid(t *testing.T) {
	for _, tc := range []struct{ registry, want string }{
		{`"com.example/w"`, "registry must be an object"},
		{`{"name": "com.example/w"}`, `registry needs "name" and "version"`},
		{`{"name": "com.example/w", "version": 1}`, "registry.version must be a string"},
		{`{"name": "", "version": "1"}`, "registry.name is empty"},
	} {
		_, err := Parse("mcp.json", []byte(`{"servers": {"w": {"command": "x", "registry": `+tc.registry+`}}}`), nil)
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("registry %s: error %v; want %q", tc.registry, err, tc.want)
		}
	}
	cfg := parseOK(t, `{"servers": {"w": {"command": "x", "registry": {"name": "a/b", "version": "1", "url": "u"}}}}`, nil)
	if len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0], `unknown key "url" in registry`) {
		t.Errorf("warnings = %v; want one about registry.url", cfg.Warnings)
	}
}
