package mcpconfig

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse checks that Parse never panics and that every error it returns
// is a *ConfigError with a position, or a join of them.
func FuzzParse(f *testing.F) {
	files, err := filepath.Glob("testdata/config/*.json")
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`[{"name": "a", "command": "${env:X}${input:y}", "tools": ["[", "*"]}]`))
	f.Add([]byte("{/* c */ \"servers\": {\"a\": {\"url\": \"http://h\",},}, // x\n}"))
	opts := &LoadOptions{LookupEnv: func(string) (string, bool) { return "", false }, BaseDir: "/base"}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse("mcp.json", data, opts)
		if err == nil {
			if cfg == nil {
				t.Fatal("Parse returned neither a config nor an error")
			}
			return
		}
		if cfg != nil {
			t.Fatal("Parse returned a config with its error")
		}
		for _, ce := range configErrors(t, err) {
			if ce.Line < 1 || ce.Column < 1 {
				t.Fatalf("error without a position: %v", ce)
			}
		}
	})
}
