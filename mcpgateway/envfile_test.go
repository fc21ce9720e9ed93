package mcpgateway

import (
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
			{2, `want KEY=VALUE, got "no pair"`},
			{3, `invalid variable name "1X"`},
			{4, "B: unterminated double quote"},
			{5, `C: unexpected "tail" after the closing quote`},
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
