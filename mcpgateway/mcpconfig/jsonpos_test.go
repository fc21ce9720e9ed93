package mcpconfig

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestSyntaxErrorPositions checks where a syntax error is reported, with
// comments and trailing commas around it, without reading the error's
// text: at is the text that starts at the offending byte, once in src.
// The position comes from the decoder's offsets, so the same holds under
// GOEXPERIMENT=jsonv2, whose messages differ.
func TestSyntaxErrorPositions(t *testing.T) {
	tests := []struct{ name, src, at string }{
		{"missing comma after a trailing comma", "{\n  \"servers\": {\n    \"a\": {\"command\": \"x\",}\n    \"b\": {}\n  }\n}", `"b"`},
		{"space inside a literal", `{"servers": tru e}`, " e}"},
		{"tab inside a literal after comments", "{/* a */ \"servers\": // b\n\tfals\te}", "\te}"},
		{"bad escape", `{"servers": {"a": {"command": "x\qy"}}}`, `qy"`},
		{"bad unicode escape", `{"servers": {"a": {"command": "\u12G4"}}}`, `G4"`},
		{"control character in a string", "{\"servers\": {\"a\": {\"command\": \"x\x01\"}}}", "\x01"},
		{"bad exponent", `{"servers": {"a": {"command": "x", "x": 1e}}}`, "}}}"},
		{"comment in a number", `{"servers": 1/* c */2}`, "2}"},
		{"character after comments", "// one\n/* two\n */ {\"servers\": {}} // three\n x", "x"},
		{"after multibyte text", "{\"servers\": {\"é€\": {\"command\": \"€\" \"x\": 1}}}", `"x"`},
		{"colon missing", `{"servers" {}}`, "{}}"},
		{"two commas", `{"servers": {"a": {"args": ["x",, "y"]}}}`, `, "y"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if strings.Count(tt.src, tt.at) != 1 {
				t.Fatalf("bad case: %q is not once in the source", tt.at)
			}
			off := strings.Index(tt.src, tt.at)
			line := 1 + strings.Count(tt.src[:off], "\n")
			col := 1 + utf8.RuneCountInString(tt.src[strings.LastIndexByte(tt.src[:off], '\n')+1:off])
			_, err := Parse("mcp.json", []byte(tt.src), nil)
			ces := configErrors(t, err)
			if len(ces) != 1 || ces[0].Line != line || ces[0].Column != col {
				t.Fatalf("Parse errors = %v; want one at %d:%d", err, line, col)
			}
		})
	}
}

// TestSyntaxErrorEndOfFile checks that a truncated file, with or without a
// comment at its end, is an unexpected end at the last byte.
func TestSyntaxErrorEndOfFile(t *testing.T) {
	for _, src := range []string{`{"servers": {"a": {"command": "x"`, "{\"servers\": {\"a\": // x\n", `{"servers": {"a": "`, `{"servers": /* x`} {
		_, err := Parse("mcp.json", []byte(src), nil)
		ces := configErrors(t, err)
		line := 1 + strings.Count(src, "\n")
		col := 1 + utf8.RuneCountInString(src[strings.LastIndexByte(src, '\n')+1:])
		if len(ces) != 1 || ces[0].Line != line || ces[0].Column != col {
			t.Errorf("Parse(%q) errors = %v; want one at the end, %d:%d", src, err, line, col)
		}
	}
}

// TestJSONCAccepted checks files VS Code accepts that hujson alone would
// refuse: a line comment with no newline after it at the end, and a
// comment that is not UTF-8.
func TestJSONCAccepted(t *testing.T) {
	for _, src := range []string{
		`{"servers": {"a": {"command": "x",},}} // end`,
		"{\"servers\": {\"a\": {\"command\": \"x\",},}} /* \xff */ // \xfe\n",
	} {
		cfg, err := Parse("mcp.json", []byte(src), nil)
		if err != nil || len(cfg.Servers) != 1 {
			t.Errorf("Parse(%q) = %v, %v; want one server", src, cfg, err)
		}
	}
}
