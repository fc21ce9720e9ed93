package mcpregistry

import (
	"errors"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver testenv.MCPRegistry creates its database with

	"github.com/elysia-go/elysia/internal/testenv"
)

// TestOfficialRegistry reads the official MCP Registry (its own code, on
// the test PostgreSQL) seeded with a remote server, an npm package in two
// versions and a package with a required secret, and turns each into an
// entry.
func TestOfficialRegistry(t *testing.T) {
	url := testenv.MCPRegistry(t, testenv.RegistrySeed(t))
	c := newClient(t, url, nil)
	ctx := t.Context()

	all, err := c.Search(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 3 {
		t.Errorf("Search(\"\") = %d servers; want 3 (the latest version of each)", len(all))
	}
	found, err := c.Search(ctx, "everything", 10)
	if err != nil {
		t.Fatal(err)
	}
	latest := testenv.EverythingVersion(t)
	if len(found) != 1 || found[0].Server.Name != testenv.SeedEverything || found[0].Server.Version != latest || !found[0].IsLatest {
		t.Fatalf("Search(everything) = %+v; want %s %s, latest", found, testenv.SeedEverything, latest)
	}

	old, err := c.Get(ctx, testenv.SeedEverything, testenv.SeedEverythingOld)
	if err != nil || old.Server.Version != testenv.SeedEverythingOld || old.IsLatest {
		t.Errorf("Get(old) = %+v, %v; want version %s, not latest", old, err, testenv.SeedEverythingOld)
	}
	if _, err := c.Get(ctx, testenv.SeedEverything, "9.9.9"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get(9.9.9) = %v; want ErrNotFound", err)
	}
	if _, err := c.Get(ctx, "io.github.nobody/nothing", ""); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get(nothing) = %v; want ErrNotFound", err)
	}

	for _, tc := range []struct {
		name string
		opts *EntryOptions
		want []string // in the entry's JSON
	}{
		{testenv.SeedEverything, nil, []string{`"command":"npx"`, `"@modelcontextprotocol/server-everything@` + latest + `","stdio"]`}},
		{testenv.SeedRemote, nil, []string{`"type":"http"`, `"url":"https://mcp.example.com/mcp"`, `"Bearer ${input:weather_api_key}"`}},
		{testenv.SeedSecret, &EntryOptions{Values: map[string]string{"VAULT_NAMESPACE": "team"}},
			[]string{`"command":"uvx"`, `"mcp-vault==0.3.0"`, `"VAULT_TOKEN":"${input:vault_vault_token}"`, `"VAULT_ADDR":"https://vault.example.com"`, `"VAULT_NAMESPACE":"team"`}},
	} {
		rec, err := c.Get(ctx, tc.name, "")
		if err != nil {
			t.Fatal(err)
		}
		e, err := NewEntry(&rec.Server, tc.opts)
		if err != nil {
			t.Fatalf("NewEntry(%s): %v", tc.name, err)
		}
		parseEntry(t, e)
		for _, w := range tc.want {
			if !strings.Contains(string(e.JSON()), w) {
				t.Errorf("entry of %s lacks %s:\n%s", tc.name, w, e.JSON())
			}
		}
	}
}
