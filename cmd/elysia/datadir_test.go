package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

func TestDataDir(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, goos string
		env        map[string]string
		want       string // "" wants an error
	}{
		{"xdg", "linux", map[string]string{"XDG_DATA_HOME": "/x/data", "HOME": "/home/a"}, "/x/data/elysia"},
		{"relative xdg is ignored", "linux", map[string]string{"XDG_DATA_HOME": "data", "HOME": "/home/a"}, "/home/a/.local/share/elysia"},
		{"linux", "linux", map[string]string{"HOME": "/home/a"}, "/home/a/.local/share/elysia"},
		{"freebsd", "freebsd", map[string]string{"HOME": "/home/a"}, "/home/a/.local/share/elysia"},
		{"macos", "darwin", map[string]string{"HOME": "/Users/a"}, "/Users/a/Library/Application Support/elysia"},
		{"windows", "windows", map[string]string{"LocalAppData": `C:\Users\a\AppData\Local`}, filepath.Join(`C:\Users\a\AppData\Local`, "elysia")},
		{"no home", "linux", nil, ""},
		{"windows without LocalAppData", "windows", map[string]string{"HOME": "/home/a"}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := dataDir(tt.goos, func(k string) string { return tt.env[k] })
			if tt.want == "" {
				if err == nil {
					t.Errorf("dataDir = %q, want an error", got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("dataDir = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// TestDatabaseDSNNoHome: with no folder for the database, a command says
// how to name one instead of writing into its working folder.
func TestDatabaseDSNNoHome(t *testing.T) {
	t.Parallel()
	_, err := databaseDSN("", func(string) string { return "" })
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitUsage || !strings.Contains(err.Error(), "--db") {
		t.Errorf("databaseDSN with no home: %v, want a usage error naming --db", err)
	}
	if got, err := databaseDSN("-", func(string) string { return "" }); got != "-" || err != nil {
		t.Errorf(`databaseDSN("-") = %q, %v`, got, err)
	}
}

// TestMCPServeReadOnlyFolder: `elysia mcp serve` as a desktop client starts
// it, in a folder it may not write (Claude Desktop on macOS starts it in /)
// and with only --config: it serves and calls tools, writes nothing in that
// folder, and keeps its database in the user's data folder.
func TestMCPServeReadOnlyFolder(t *testing.T) {
	t.Parallel()
	bin := elysiaBin(t)
	cfgDir, home, wd := t.TempDir(), t.TempDir(), t.TempDir()
	cfg := filepath.Join(cfgDir, "mcp.json")
	writeFile(t, cfg, defaultConfig(t))
	if err := os.Chmod(wd, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(wd, 0o755) }) // so that TempDir's clean-up may remove it
	// As a desktop client: HOME, no XDG_DATA_HOME, no ELYSIA_* settings.
	env := append(cleanEnv(), "HOME="+home, "XDG_DATA_HOME=", "XDG_CONFIG_HOME=")
	c, err := mcpclient.NewStdioMCPClientWithOptions(bin, env, []string{"mcp", "serve", "--config", cfg},
		mcptransport.WithCommandFunc(func(ctx context.Context, command string, env []string, args []string) (*exec.Cmd, error) {
			cmd := exec.CommandContext(ctx, command, args...)
			cmd.Env, cmd.Dir = env, wd
			return cmd, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.ProtocolVersion20251125
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if text, isErr := callText(t, c, "todo__create_todo", map[string]any{"title": "from a read-only folder"}); isErr {
		t.Fatalf("call: %s", text)
	}
	if text, isErr := callText(t, c, "ask", map[string]any{"question": "list my todos"}); isErr {
		t.Fatalf("ask (a saved conversation): %s", text)
	}
	_ = c.Close() // ends the process; what matters is what it left behind

	entries, err := os.ReadDir(wd)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("mcp serve wrote %q into its working folder", e.Name())
	}
	db := filepath.Join(home, ".local", "share", "elysia", databaseFile)
	if _, err := os.Stat(db); err != nil {
		t.Errorf("no database in the user's data folder: %v", err)
	}
}
