package mcpconfig

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseEnvFile(t *testing.T) {
	tests := []struct {
		name     string
		src      string
		want     map[string]string
		wantErrs []envFileError
	}{
		{"plain", "A=1\nB = two words \n", map[string]string{"A": "1", "B": "two words"}, nil},
		{"comments and blanks", "# top\n\n  # indented\nA=1 # trailing\nB=x#y\n", map[string]string{"A": "1", "B": "x#y"}, nil},
		{"export and crlf", "export A=1\r\nB=2\r\n", map[string]string{"A": "1", "B": "2"}, nil},
		{"double quotes", `A="a # not a comment\n\"q\""` + " # c\n", map[string]string{"A": "a # not a comment\n\"q\""}, nil},
		{"single quotes", `A='raw \n $X'`, map[string]string{"A": `raw \n $X`}, nil},
		{"empty value and equals in value", "A=\nB=x=y\n", map[string]string{"A": "", "B": "x=y"}, nil},
		{"later wins", "A=1\nA=2\n", map[string]string{"A": "2"}, nil},
		{"errors", "A=1\nno pair\n1X=2\nB=\"open\nC='x' tail\n", map[string]string{"A": "1"}, []envFileError{
			{2, `no "=" on the line (want KEY=VALUE)`},
			{3, `invalid variable name before "=" (want a letter or _, then letters, digits, _ or .)`},
			{4, "B: unterminated double quote"},
			{5, `C: unexpected text after the closing quote (quote the whole value, or start a comment with " #")`},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, errs := parseEnvFile([]byte(tt.src))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("vars mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantErrs, errs, cmp.AllowUnexported(envFileError{})); diff != "" {
				t.Errorf("errors mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEnvFileErrorsNeverQuoteValues feeds the mistakes operators make in a
// dotenv file holding secrets and checks that no message repeats any part
// of a value: each names the line and, when there is one, the key.
func TestEnvFileErrorsNeverQuoteValues(t *testing.T) {
	const secret = "sk-live-9f8e7d6c"
	tests := []struct {
		name, line, wantKey string
	}{
		{"colon instead of equals", "API_KEY: " + secret, ""},
		{"bare value pasted", secret, ""},
		{"space instead of equals", "API_KEY " + secret, ""},
		{"colon then equals in value", "API_KEY: " + secret + "=x", ""},
		{"unterminated double quote", `API_KEY="` + secret, "API_KEY"},
		{"unterminated single quote", `API_KEY='` + secret, "API_KEY"},
		{"text after the quote", `API_KEY="sk-live" ` + secret[len("sk-live"):], "API_KEY"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errs := parseEnvFile([]byte("OK=1\n" + tt.line + "\n"))
			if len(errs) != 1 {
				t.Fatalf("errors = %v, want one", errs)
			}
			e := errs[0]
			if e.line != 2 {
				t.Errorf("line = %d, want 2", e.line)
			}
			for _, part := range []string{secret, secret[len("sk-live"):], "9f8e"} {
				if strings.Contains(e.msg, part) {
					t.Errorf("message %q quotes the value (%q)", e.msg, part)
				}
			}
			if tt.wantKey != "" && !strings.HasPrefix(e.msg, tt.wantKey+": ") {
				t.Errorf("message %q does not name the key %s", e.msg, tt.wantKey)
			}
		})
	}
}
