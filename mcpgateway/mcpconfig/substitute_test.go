package mcpconfig

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestInputEnvVar(t *testing.T) {
	for id, want := range map[string]string{
		"api_token": "ELYSIA_INPUT_API_TOKEN",
		"api-token": "ELYSIA_INPUT_API_TOKEN",
		"gh.pat2":   "ELYSIA_INPUT_GH_PAT2",
		"Token":     "ELYSIA_INPUT_TOKEN",
	} {
		if got := InputEnvVar(id); got != want {
			t.Errorf("InputEnvVar(%q) = %q, want %q", id, got, want)
		}
	}
}

// resolved is the part of a ServerConfig substitution decides.
type resolved struct {
	Command    string
	Args       []string
	Env        map[string]string
	URL        string
	Headers    map[string]string
	Templates  map[string]string
	Secrets    []string
	Unresolved string
	UserValues map[string]UserValue
}

func TestSubstitution(t *testing.T) {
	const inputs = `"inputs": [{"type": "promptString", "id": "api_token", "password": true}, {"type": "pickString", "id": "region", "default": "eu"}]`
	tests := []struct {
		name string
		src  string
		env  map[string]string
		want resolved
	}{
		{
			name: "env in every field",
			src:  `{"servers": {"a": {"command": "${env:BIN}", "args": ["--key=${env:KEY}"], "env": {"K": "${env:KEY}"}}}}`,
			env:  map[string]string{"BIN": "/opt/srv", "KEY": "s3cret-key"},
			want: resolved{
				Command: "/opt/srv", Args: []string{"--key=s3cret-key"}, Env: map[string]string{"K": "s3cret-key"},
				Templates: map[string]string{"command": "${env:BIN}", "args[0]": "--key=${env:KEY}", "env.K": "${env:KEY}"},
				Secrets:   []string{"s3cret-key", "/opt/srv"},
			},
		},
		{
			name: "input from ELYSIA_INPUT_",
			src:  `{` + inputs + `, "servers": {"a": {"url": "https://h/${input:region}", "headers": {"Authorization": "Bearer ${input:api_token}"}}}}`,
			env:  map[string]string{"ELYSIA_INPUT_API_TOKEN": "tok-123456", "ELYSIA_INPUT_REGION": "us"},
			want: resolved{
				URL: "https://h/us", Headers: map[string]string{"Authorization": "Bearer tok-123456"},
				Templates: map[string]string{"url": "https://h/${input:region}", "headers.Authorization": "Bearer ${input:api_token}"},
				Secrets:   []string{"Bearer tok-123456", "tok-123456", "us"},
			},
		},
		{
			name: "input default",
			src:  `{` + inputs + `, "servers": {"a": {"url": "https://h/${input:region}"}}}`,
			want: resolved{URL: "https://h/eu", Templates: map[string]string{"url": "https://h/${input:region}"}, Secrets: []string{"eu"}},
		},
		{
			name: "missing input",
			src:  `{` + inputs + `, "servers": {"a": {"command": "x", "env": {"T": "${input:api_token}"}}}}`,
			want: resolved{
				Command: "x", Env: map[string]string{"T": ""}, Templates: map[string]string{"env.T": "${input:api_token}"},
				Unresolved: `input "api_token" has no value: set ELYSIA_INPUT_API_TOKEN`,
			},
		},
		{
			name: "missing env",
			src:  `{"servers": {"a": {"command": "x", "args": ["${env:NOPE}", "${env:NOPE2}"]}}}`,
			want: resolved{
				Command: "x", Args: []string{"", ""}, Templates: map[string]string{"args[0]": "${env:NOPE}", "args[1]": "${env:NOPE2}"},
				Unresolved: "environment variable NOPE is not set (used as ${env:NOPE}); environment variable NOPE2 is not set (used as ${env:NOPE2})",
			},
		},
		{
			name: "server's own inputs",
			src: `{"inputs": [{"type": "promptString", "id": "t"}], "servers": [
				{"name": "a", "url": "http://h/${input:t}", "inputs": [{"type": "promptString", "id": "t", "default": "local"}]}]}`,
			want: resolved{URL: "http://h/local", Templates: map[string]string{"url": "http://h/${input:t}"}, Secrets: []string{"local"}},
		},
		{
			name: "undeclared input from env",
			src:  `{"servers": {"a": {"url": "http://h/${input:loose}"}}}`,
			env:  map[string]string{"ELYSIA_INPUT_LOOSE": "v4lue"},
			want: resolved{URL: "http://h/v4lue", Templates: map[string]string{"url": "http://h/${input:loose}"}, Secrets: []string{"v4lue"}},
		},
		{
			name: "Claude Code's ${VAR} and ${VAR:-default}",
			src:  `{"mcpServers": {"gh": {"type": "http", "url": "${API_BASE:-https://api.example}/mcp", "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"}}}}`,
			env:  map[string]string{"GITHUB_TOKEN": "ghp_abc123"},
			want: resolved{
				URL: "https://api.example/mcp", Headers: map[string]string{"Authorization": "Bearer ghp_abc123"},
				Templates: map[string]string{"url": "${API_BASE:-https://api.example}/mcp", "headers.Authorization": "Bearer ${GITHUB_TOKEN}"},
				Secrets:   []string{"https://api.example", "Bearer ghp_abc123", "ghp_abc123"},
			},
		},
		{
			name: "a set variable wins over its default, even empty",
			src:  `{"servers": {"a": {"command": "x", "args": ["--port=${PORT:-8080}", "--v=${V:-1}"], "env": {"E": "${EMPTY:-d}"}}}}`,
			env:  map[string]string{"PORT": "9090", "EMPTY": ""},
			want: resolved{
				Command: "x", Args: []string{"--port=9090", "--v=1"}, Env: map[string]string{"E": ""},
				Templates: map[string]string{"args[0]": "--port=${PORT:-8080}", "args[1]": "--v=${V:-1}", "env.E": "${EMPTY:-d}"},
				Secrets:   []string{"9090", "1"},
			},
		},
		{
			name: "unset ${VAR} without a default",
			src:  `{"servers": {"a": {"url": "https://h/mcp", "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"}}}}`,
			want: resolved{
				URL: "https://h/mcp", Headers: map[string]string{"Authorization": "Bearer "},
				Templates:  map[string]string{"headers.Authorization": "Bearer ${GITHUB_TOKEN}"},
				Secrets:    []string{"Bearer "},
				Unresolved: "environment variable GITHUB_TOKEN is not set (used as ${GITHUB_TOKEN})",
			},
		},
		{
			name: "editor variables are not secrets",
			src:  `{"servers": {"a": {"command": "${userHome}${/}bin${pathSeparator}srv", "args": ["${workspaceFolderBasename}"]}}}`,
			env:  map[string]string{"HOME": "/home/u"},
			want: resolved{
				Command: "/home/u/bin/srv", Args: []string{"base"},
				Templates: map[string]string{"command": "${userHome}${/}bin${pathSeparator}srv", "args[0]": "${workspaceFolderBasename}"},
			},
		},
		{
			name: "user secrets in headers stay for each user",
			src: `{"servers": {"gh": {"url": "https://h/mcp", "headers": {"Authorization": "Bearer ${user:GITHUB_TOKEN}",
				"X-Org": "${ORG}-${user:org.id}", "X-Static": "s3cret-static"}}}}`,
			env: map[string]string{"ORG": "acme"},
			want: resolved{
				URL:       "https://h/mcp",
				Headers:   map[string]string{"Authorization": "Bearer ${user:GITHUB_TOKEN}", "X-Org": "acme-${user:org.id}", "X-Static": "s3cret-static"},
				Templates: map[string]string{"headers.Authorization": "Bearer ${user:GITHUB_TOKEN}", "headers.X-Org": "${ORG}-${user:org.id}"},
				Secrets:   []string{"s3cret-static", "acme"},
				UserValues: map[string]UserValue{
					"headers.Authorization": {{Text: "Bearer "}, {Secret: "GITHUB_TOKEN"}},
					"headers.X-Org":         {{Text: "acme-"}, {Secret: "org.id"}},
				},
			},
		},
		{
			name: "user secrets in env of a stdio server",
			src:  `{"servers": {"a": {"command": "x", "env": {"TOKEN": "${user:T}", "BOTH": "${user:A}:${user:B}"}}}}`,
			want: resolved{
				Command: "x", Env: map[string]string{"TOKEN": "${user:T}", "BOTH": "${user:A}:${user:B}"},
				Templates: map[string]string{"env.TOKEN": "${user:T}", "env.BOTH": "${user:A}:${user:B}"},
				UserValues: map[string]UserValue{
					"env.TOKEN": {{Secret: "T"}},
					"env.BOTH":  {{Secret: "A"}, {Text: ":"}, {Secret: "B"}},
				},
			},
		},
		{
			name: "workspaceFolder is not a secret",
			src:  `{"servers": {"a": {"command": "x", "args": ["${workspaceFolder}/data"]}}}`,
			want: resolved{Command: "x", Args: []string{"/base/data"}, Templates: map[string]string{"args[0]": "${workspaceFolder}/data"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := parseOK(t, tt.src, tt.env).Servers[0]
			got := resolved{s.Command, s.Args, s.Env, s.URL, s.Headers, s.Templates, s.Secrets, s.Unresolved, s.UserValues}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Parse(%s) mismatch (-want +got):\n%s", tt.src, diff)
			}
		})
	}
}

func TestPrompt(t *testing.T) {
	src := `{"inputs": [{"type": "promptString", "id": "tok", "description": "Token", "password": true},
		{"type": "promptString", "id": "off"}, {"type": "promptString", "id": "broken"}],
	"servers": {
		"off": {"command": "x", "enabled": false, "env": {"T": "${input:off}"}},
		"a": {"command": "x", "env": {"T": "${input:tok}"}},
		"b": {"command": "y", "env": {"T": "${input:tok}"}},
		"c": {"command": "z", "env": {"T": "${input:broken}"}}}}`
	var mu sync.Mutex
	var asked []Input
	prompt := func(in Input) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, in)
		if in.ID == "broken" {
			return "", errors.New("no terminal")
		}
		return "typed-" + in.ID, nil
	}
	cfg, err := Parse("mcp.json", []byte(src), &LoadOptions{LookupEnv: envMap(nil), Prompt: prompt})
	if err != nil {
		t.Fatal(err)
	}
	want := []Input{{Type: "promptString", ID: "tok", Description: "Token", Password: true}, {Type: "promptString", ID: "broken"}}
	if diff := cmp.Diff(want, asked); diff != "" {
		t.Errorf("prompted inputs (-want +got):\n%s", diff)
	}
	for i, want := range []string{"", "typed-tok", "typed-tok", ""} {
		if got := cfg.Servers[i].Env["T"]; got != want {
			t.Errorf("server %s: T = %q, want %q", cfg.Servers[i].Name, got, want)
		}
	}
	if got := cfg.Servers[0].Unresolved; !strings.Contains(got, "ELYSIA_INPUT_OFF") {
		t.Errorf("disabled server Unresolved = %q, want it to name ELYSIA_INPUT_OFF", got)
	}
	if got, want := cfg.Servers[3].Unresolved, `input "broken" has no value: prompt: no terminal (or set ELYSIA_INPUT_BROKEN)`; got != want {
		t.Errorf("Unresolved = %q, want %q", got, want)
	}
}

func TestMCPURL(t *testing.T) {
	tests := []struct {
		name      string
		src       string
		env       map[string]string
		wantNames []string
		wantWarn  string
	}{
		{"unset", `{"servers": {"a": {"command": "x"}}}`, nil, []string{"a"}, ""},
		{"empty", `{"servers": {"a": {"command": "x"}}}`, map[string]string{"MCP_URL": ""}, []string{"a"}, ""},
		{"added last", `{"servers": {"a": {"command": "x"}}}`, map[string]string{"MCP_URL": "http://localhost:8000/mcp"},
			[]string{"a", "mcp_server"}, ""},
		{"file wins", `{"servers": {"mcp-server": {"command": "x"}}}`, map[string]string{"MCP_URL": "http://localhost:8000/mcp"},
			[]string{"mcp-server"}, `mcp.json:1:14: server "mcp-server": MCP_URL ignored: the file already has this server`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := parseOK(t, tt.src, tt.env)
			var names []string
			for _, s := range cfg.Servers {
				names = append(names, s.Name)
			}
			if diff := cmp.Diff(tt.wantNames, names); diff != "" {
				t.Errorf("servers (-want +got):\n%s", diff)
			}
			if got := strings.Join(cfg.Warnings, "\n"); got != tt.wantWarn {
				t.Errorf("warnings = %q, want %q", got, tt.wantWarn)
			}
		})
	}
	cfg := parseOK(t, `[]`, map[string]string{"MCP_URL": "https://h/mcp?key=abcd1234"})
	want := ServerConfig{Name: "mcp_server", Transport: TransportHTTP, URL: "https://h/mcp?key=abcd1234", Enabled: true,
		ConnectTimeout: DefaultRemoteConnectTimeout, CallTimeout: DefaultCallTimeout,
		Templates: map[string]string{"url": "${env:MCP_URL}"}, Secrets: []string{"https://h/mcp?key=abcd1234"}}
	if diff := cmp.Diff(want, cfg.Servers[0]); diff != "" {
		t.Errorf("MCP_URL server (-want +got):\n%s", diff)
	}
	_, err := Parse("mcp.json", []byte(`[]`), &LoadOptions{LookupEnv: envMap(map[string]string{"MCP_URL": "localhost:8000"})})
	if !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("invalid MCP_URL: error %v, want ErrInvalidConfig", err)
	}
}

// TestPromptErrorFallsBackToDefault checks the order a reload relies on:
// ELYSIA_INPUT_<ID>, then the prompter, then the default when the prompter
// has no answer, so that a reload (whose prompter knows only what was typed
// at start-up) resolves inputs exactly as start-up did. A server's own
// input carries the server's name, so that remembered answers of two
// servers' same-named inputs stay apart.
func TestPromptErrorFallsBackToDefault(t *testing.T) {
	src := `{"inputs": [{"type": "promptString", "id": "region", "default": "eu"}, {"type": "promptString", "id": "tok"}],
	"servers": [
		{"name": "a", "command": "x", "env": {"R": "${input:region}", "T": "${input:tok}"}},
		{"name": "b", "command": "x", "env": {"L": "${input:own}"},
		 "inputs": [{"type": "promptString", "id": "own", "default": "local-default"}]}]}`
	var asked []Input
	noAnswer := func(in Input) (string, error) {
		asked = append(asked, in)
		return "", errors.New("not given at start-up")
	}
	cfg, err := Parse("mcp.json", []byte(src), &LoadOptions{LookupEnv: envMap(nil), Prompt: noAnswer})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.Servers[0].Env["R"], "eu"; got != want {
		t.Errorf("region = %q, want the default %q", got, want)
	}
	if got, want := cfg.Servers[0].Unresolved, `input "tok" has no value: prompt: not given at start-up (or set ELYSIA_INPUT_TOK)`; got != want {
		t.Errorf("Unresolved = %q, want %q", got, want)
	}
	if got, want := cfg.Servers[1].Env["L"], "local-default"; got != want {
		t.Errorf("own input = %q, want the default %q", got, want)
	}
	if got := cfg.Servers[1].Unresolved; got != "" {
		t.Errorf("server b unresolved: %s", got)
	}
	var servers []string
	for _, in := range asked {
		servers = append(servers, in.Server+"/"+in.ID)
	}
	if diff := cmp.Diff([]string{"/region", "/tok", "b/own"}, servers); diff != "" {
		t.Errorf("prompted inputs (-want +got):\n%s", diff)
	}

	// The environment variable comes first, the prompter is not asked.
	asked = nil
	cfg, err = Parse("mcp.json", []byte(src), &LoadOptions{
		LookupEnv: envMap(map[string]string{"ELYSIA_INPUT_REGION": "us", "ELYSIA_INPUT_TOK": "t0ken", "ELYSIA_INPUT_OWN": "mine"}),
		Prompt:    noAnswer,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(asked) != 0 {
		t.Errorf("prompted %d times with every ELYSIA_INPUT_ set", len(asked))
	}
	if got := cfg.Servers[0].Env["R"] + "," + cfg.Servers[1].Env["L"]; got != "us,mine" {
		t.Errorf("values = %q, want us,mine", got)
	}
}
