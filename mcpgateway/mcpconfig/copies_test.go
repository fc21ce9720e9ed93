package mcpconfig

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestCopiesParse(t *testing.T) {
	src := `{
  "inputs": [{"id": "tok", "type": "promptString", "password": true}],
  "servers": {
    "todo": {
      "command": "./bin/todo-mcp",
      "args": ["--stdio"],
      "env": {"A": "primary-secret"},
      "description": "todos",
      "call_timeout": 7,
      "policy": "round_robin",
      "copies": [
        {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer ${input:tok}"}},
        {"serverUrl": "http://127.0.0.1:10/sse", "type": "sse"},
        {"command": "todo-mcp", "env": {"B": "${env:COPY_SECRET}"}}
      ]
    }
  }
}`
	cfg := parseOK(t, src, map[string]string{"ELYSIA_INPUT_TOK": "tok-value-123", "COPY_SECRET": "copy-secret-456"})
	s := cfg.Servers[0]
	if s.Policy != PolicyRoundRobin || len(s.Copies) != 3 {
		t.Fatalf("policy %q, %d copies; want round_robin and 3", s.Policy, len(s.Copies))
	}
	all := s.AllCopies()
	if len(all) != 4 || all[0].Copies != nil || all[0].Command == "" || all[0].Transport != TransportStdio {
		t.Fatalf("AllCopies()[0] = %+v; want the server's own keys without copies", all[0])
	}
	c1, c2, c3 := s.Copies[0], s.Copies[1], s.Copies[2]
	if c1.Transport != TransportHTTP || c1.URL != "http://127.0.0.1:9/mcp" || c1.Headers["Authorization"] != "Bearer tok-value-123" {
		t.Errorf("copy 2 = %s %s %v", c1.Transport, c1.URL, c1.Headers)
	}
	if c2.Transport != TransportSSE || c2.URL != "http://127.0.0.1:10/sse" {
		t.Errorf("copy 3 = %s %s", c2.Transport, c2.URL)
	}
	if c3.Transport != TransportStdio || c3.Command != "todo-mcp" || len(c3.Args) != 0 || c3.Env["B"] != "copy-secret-456" || c3.Env["A"] != "" {
		t.Errorf("copy 4 = %s %q %v %v; want its own command, no args and only its own env", c3.Transport, c3.Command, c3.Args, c3.Env)
	}
	for i, c := range s.Copies {
		if c.Name != "todo" || c.Description != "todos" || c.CallTimeout.Seconds() != 7 || c.Copies != nil {
			t.Errorf("copy %d does not share the server's keys: %+v", i+2, c)
		}
	}
	// Every secret of every copy is masked by the server and by each copy.
	for _, m := range []func(string) string{s.Masker(), c1.Masker(), c3.Masker()} {
		got := m("primary-secret tok-value-123 copy-secret-456")
		if strings.Contains(got, "secret") && strings.Contains(got, "-") && got != "*** *** ***" {
			t.Errorf("masked %q", got)
		}
	}
	if d := s.Display(); len(d.Copies) != 3 || d.Copies[0].Headers["Authorization"] != "***" || d.Copies[2].Env["B"] != "***" {
		t.Errorf("Display copies = %+v", d.Copies)
	}
	if w := c1.Where(); w != "http://127.0.0.1:9/mcp" {
		t.Errorf("Where = %q", w)
	}
	// Equal sees a change in a copy.
	other := parseOK(t, strings.Replace(src, "127.0.0.1:10", "127.0.0.1:11", 1), map[string]string{"ELYSIA_INPUT_TOK": "tok-value-123", "COPY_SECRET": "copy-secret-456"})
	if s.Equal(other.Servers[0]) {
		t.Error("Equal ignores a changed copy")
	}
}

func TestCopiesErrors(t *testing.T) {
	many := make([]string, 1000)
	for i := range many {
		many[i] = fmt.Sprintf(`{"url": "http://127.0.0.1:%d/mcp"}`, 1000+i)
	}
	for _, tc := range []struct {
		name, src, want string
	}{
		{"no transport", `{"servers": {"a": {"command": "x", "copies": [{"url": "http://h/mcp"}, {"env": {"A": "b"}}]}}}`,
			`mcp.json:1:72: server "a": copies[1]: missing command or url (cannot tell the transport)`},
		{"shared key", `{"servers": {"a": {"command": "x", "copies": [{"url": "http://h/mcp", "call_timeout": 3}]}}}`,
			`copies[0]: key "call_timeout" is the server's, not a copy's`},
		{"not an array", `{"servers": {"a": {"command": "x", "copies": {"url": "http://h/mcp"}}}}`,
			"copies must be an array of objects, got an object"},
		{"not an object", `{"servers": {"a": {"command": "x", "copies": ["http://h/mcp"]}}}`,
			"copies[0]: a copy must be an object, got a string"},
		{"bad url", `{"servers": {"a": {"command": "x", "copies": [{"url": "ftp://h/mcp"}]}}}`,
			`copies[0]: invalid url "ftp://h/mcp"`},
		{"bad policy", `{"servers": {"a": {"command": "x", "policy": "random", "copies": [{"url": "http://h/mcp"}]}}}`,
			`policy must be "priority" or "round_robin", got "random"`},
		{"too many", `{"servers": {"a": {"command": "x", "copies": [` + strings.Join(many, ",") + `]}}}`,
			"copies has 1000 entries; at most 16 are allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("mcp.json", []byte(tc.src), &LoadOptions{LookupEnv: envMap(nil)})
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

func TestPolicyWithoutCopiesWarns(t *testing.T) {
	cfg := parseOK(t, `{"servers": {"a": {"command": "x", "policy": "priority"}}}`, nil)
	if len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0], "policy ignored: the server has no copies") {
		t.Fatalf("warnings = %q", cfg.Warnings)
	}
}

func TestValidateCopies(t *testing.T) {
	cfg := &Config{File: "code", Servers: []ServerConfig{{Name: "a", Transport: TransportStdio, Command: "x", Enabled: true,
		Copies: []ServerConfig{{Name: "a", Transport: TransportHTTP, Line: 3, Column: 4}}}}}
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), `code:3:4: server "a": copies[0]: missing url`) {
		t.Fatalf("Validate = %v", err)
	}
}
