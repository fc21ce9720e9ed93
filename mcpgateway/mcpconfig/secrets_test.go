package mcpconfig

import (
	"bytes"
	"log/slog"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMask(t *testing.T) {
	s := ServerConfig{Secrets: []string{"abc", "tok-1234", "tok-1234-long", "a b+c/d"}}
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", ""},
		{"nothing secret", "connection refused", "connection refused"},
		{"longest first", "key tok-1234-long and tok-1234", "key *** and ***"},
		{"query escaped", "GET /x?k=a+b%2Bc%2Fd", "GET /x?k=***"},
		{"short secret inside text kept", "abcdef", "abcdef"},
		{"short secret alone masked", " abc\n", "***"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := s.Mask(tt.in); got != tt.want {
				t.Errorf("Mask(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// secretConfig parses a config whose secrets are all "SECRET-..." values.
func secretConfig(t *testing.T) ServerConfig {
	t.Helper()
	src := `{"inputs": [{"type": "promptString", "id": "pw", "password": true}],
	"servers": {"a": {"command": "./bin/srv", "args": ["--token", "${input:pw}", "--db=${env:DB}"],
		"env": {"TODO_DB": "SECRET-db-path", "PW": "${input:pw}"},
		"url": "https://h/mcp?key=${env:KEY}", "headers": {"Authorization": "Bearer SECRET-header"}}}}`
	cfg := parseOK(t, src, map[string]string{"ELYSIA_INPUT_PW": "SECRET-pw", "DB": "SECRET-env-db", "KEY": "SECRET-key"})
	return cfg.Servers[0]
}

func TestDisplay(t *testing.T) {
	got := secretConfig(t).Display()
	want := DisplayConfig{
		Command: "./bin/srv",
		Args:    []string{"--token", "${input:pw}", "--db=${env:DB}"},
		URL:     "https://h/mcp?key=${env:KEY}",
		Env:     map[string]string{"TODO_DB": "***", "PW": "***"},
		Headers: map[string]string{"Authorization": "***"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Display() mismatch (-want +got):\n%s", diff)
	}
}

func TestSecretsNeverShown(t *testing.T) {
	s := secretConfig(t)
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	logger.Info("server", "server", s)
	logger.Info("masked", "err", s.Mask("dial https://h/mcp?key=SECRET-key: Bearer SECRET-header refused (SECRET-pw)"))
	logger.Info("display", "display", s.Display())
	if strings.Contains(buf.String(), "SECRET") {
		t.Errorf("a secret reached the log:\n%s", buf.String())
	}
	for _, want := range []string{`"name":"a"`, `"transport":"stdio"`, `"command":"./bin/srv"`, `"env":{"PW":"***","TODO_DB":"***"}`, `"headers":{"Authorization":"***"}`} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, buf.String())
		}
	}
}

func TestEqual(t *testing.T) {
	a := parseOK(t, `{"servers": {"a": {"command": "x", "env": {"K": "v"}}}}`, nil).Servers[0]
	moved := parseOK(t, "{\"servers\": {\"z\": {\"command\": \"z\"},\n \"a\": {\"command\": \"x\", \"env\": {\"K\": \"v\"}}}}", nil).Servers[1]
	changed := parseOK(t, `{"servers": {"a": {"command": "x", "env": {"K": "w"}}}}`, nil).Servers[0]
	if !a.Equal(moved) {
		t.Errorf("Equal: a server that only moved in the file compares different")
	}
	if a.Equal(changed) {
		t.Errorf("Equal: a changed env value compares equal")
	}
	if !(ServerConfig{Args: []string{}}).Equal(ServerConfig{}) {
		t.Errorf("Equal: empty and nil args differ")
	}
}

// TestEqualComparesEveryField changes each field of a ServerConfig in turn:
// a field Equal forgot would make a reload keep a gateway running on the
// old value (as it once did for sampling, roots and log_level).
func TestEqualComparesEveryField(t *testing.T) {
	ignored := map[string]bool{"Line": true, "Column": true}
	typ := reflect.TypeFor[ServerConfig]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		if ignored[f.Name] {
			continue
		}
		var changed ServerConfig
		v := reflect.ValueOf(&changed).Elem().Field(i)
		switch f.Type.Kind() {
		case reflect.String:
			v.SetString("x")
		case reflect.Bool:
			v.SetBool(true)
		case reflect.Int, reflect.Int64:
			v.SetInt(1)
		case reflect.Slice:
			v.Set(reflect.MakeSlice(f.Type, 1, 1))
			if e := v.Index(0); e.Kind() == reflect.String {
				e.SetString("x")
			}
		case reflect.Map:
			v.Set(reflect.MakeMap(f.Type))
			v.SetMapIndex(reflect.ValueOf("k"), reflect.New(f.Type.Elem()).Elem())
		case reflect.Pointer:
			v.Set(reflect.New(f.Type.Elem()))
		default:
			t.Fatalf("field %s of kind %s: teach this test to change it", f.Name, f.Type.Kind())
		}
		if (ServerConfig{}).Equal(changed) {
			t.Errorf("Equal ignores %s", f.Name)
		}
	}
}

func TestChildEnv(t *testing.T) {
	service := map[string]string{
		"PATH": "/usr/bin", "HOME": "/root", "LANG": "C.UTF-8", "TERM": "xterm",
		"OPENAI_API_KEY": "sk-x", "ELYSIA_API_KEYS": "k:alice", "AWS_SECRET_ACCESS_KEY": "aws",
	}
	cfg := ServerConfig{Env: map[string]string{"TODO_DB": "/data/todos.db", "PATH": "/opt/bin"}}
	got := ChildEnv(cfg, envMap(service))
	want := []string{"HOME=/root", "LANG=C.UTF-8", "PATH=/opt/bin", "TERM=xterm", "TODO_DB=/data/todos.db"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ChildEnv mismatch (-want +got):\n%s", diff)
	}
}

// TestURLUserinfoMasked checks that a password written into a URL (not a
// substitution, so nothing else marks it as a secret) is masked wherever
// the URL is shown: Display, Mask, the log and config errors. A user name
// alone is masked too, since that is how tokens go into URLs.
func TestURLUserinfoMasked(t *testing.T) {
	tests := []struct {
		name, url, wantURL string
		leaks              []string // what must never be shown
		inText, wantText   string   // an error the server could give
	}{
		{"password", "http://user:pa55word@host/mcp", "http://user:***@host/mcp", []string{"pa55word"},
			`Post "http://user:pa55word@host/mcp": EOF (pa55word)`, `Post "http://user:***@host/mcp": EOF (***)`},
		{"short password", "http://user:pw@host/mcp", "http://user:***@host/mcp", []string{":pw@"},
			"dial http://user:pw@host/mcp", "dial http://user:***@host/mcp"},
		{"escaped password", "https://me:p%40ss%3Aword@host:8443/mcp", "https://me:***@host:8443/mcp", []string{"p%40ss", "p@ss"},
			"bad password p@ss:word for https://me:p%40ss%3Aword@host:8443", "bad password *** for https://me:***@host:8443"},
		{"token as user name", "https://ghp_tok3n@host/mcp?x=1", "https://***@host/mcp?x=1", []string{"ghp_tok3n"},
			"GET https://ghp_tok3n@host/mcp?x=1: 401", "GET https://***@host/mcp?x=1: 401"},
		{"no userinfo", "http://host/mcp?email=a@b", "http://host/mcp?email=a@b", nil,
			"GET http://host/mcp?email=a@b", "GET http://host/mcp?email=a@b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := parseOK(t, `{"servers": {"a": {"type": "http", "url": "`+tt.url+`"}}}`, nil)
			s := cfg.Servers[0]
			if got := s.Display().URL; got != tt.wantURL {
				t.Errorf("Display().URL = %q, want %q", got, tt.wantURL)
			}
			if got := s.Mask(tt.inText); got != tt.wantText {
				t.Errorf("Mask(%q) = %q, want %q", tt.inText, got, tt.wantText)
			}
			var buf bytes.Buffer
			slog.New(slog.NewJSONHandler(&buf, nil)).Info("server", "server", s)
			for _, leak := range tt.leaks {
				if strings.Contains(buf.String(), leak) {
					t.Errorf("the log shows %q:\n%s", leak, buf.String())
				}
			}
		})
	}

	// A password in a stdio server's argument (mcp-remote, a database URL).
	s := parseOK(t, `{"servers": {"a": {"command": "npx", "args": ["mcp-remote", "https://u:hunter22@h/mcp", "--db=postgres://db:dbpass1@pg/x"]}}}`, nil).Servers[0]
	want := []string{"mcp-remote", "https://u:***@h/mcp", "--db=postgres://db:***@pg/x"}
	if diff := cmp.Diff(want, s.Display().Args); diff != "" {
		t.Errorf("Display().Args (-want +got):\n%s", diff)
	}

	// A config error about the URL shows it masked.
	_, err := Parse("mcp.json", []byte(`{"servers": {"a": {"type": "http", "url": "ftp://user:pa55word@host/mcp"}}}`), &LoadOptions{LookupEnv: envMap(nil)})
	if err == nil || strings.Contains(err.Error(), "pa55word") || !strings.Contains(err.Error(), "ftp://user:***@host/mcp") {
		t.Errorf("invalid url error = %v, want it to show ftp://user:***@host/mcp", err)
	}
}
