package mcpauth

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// challengeCases are WWW-Authenticate values and their challenges: the
// examples of RFC 9110 §11.6.1 and RFC 6750 §3, and the cases the MCP Go
// SDK (oauthex) and TypeScript SDK (client/auth) test their parsers with.
var challengeCases = []struct {
	name, header string
	want         []rawChallenge
}{
	{"resource_metadata", `Bearer realm="mcp", resource_metadata="https://r.example/.well-known/oauth-protected-resource"`,
		[]rawChallenge{{scheme: "Bearer", params: Challenge{"realm": "mcp", "resource_metadata": "https://r.example/.well-known/oauth-protected-resource"}}}},
	{"step-up", `Bearer error="insufficient_scope", scope="files:read files:write", resource_metadata="https://r.example/rm"`,
		[]rawChallenge{{scheme: "Bearer", params: Challenge{"error": "insufficient_scope", "scope": "files:read files:write", "resource_metadata": "https://r.example/rm"}}}},
	{"RFC 6750 invalid_token", `Bearer realm="example", error="invalid_token", error_description="The access token expired"`,
		[]rawChallenge{{scheme: "Bearer", params: Challenge{"realm": "example", "error": "invalid_token", "error_description": "The access token expired"}}}},
	{"empty scope", `Bearer realm="mcp", scope=""`,
		[]rawChallenge{{scheme: "Bearer", params: Challenge{"realm": "mcp", "scope": ""}}}},
	{"scheme only", `Basic`, []rawChallenge{{scheme: "Basic", params: Challenge{}}}},
	{"RFC 9110 two challenges", `Newauth realm="apps", type=1, title="Login to \"apps\"", Basic realm="simple"`,
		[]rawChallenge{{scheme: "Newauth", params: Challenge{"realm": "apps", "type": "1", "title": `Login to "apps"`}},
			{scheme: "Basic", params: Challenge{"realm": "simple"}}}},
	{"bare scheme then bearer", `Basic, Bearer realm="example"`,
		[]rawChallenge{{scheme: "Basic", params: Challenge{}}, {scheme: "Bearer", params: Challenge{"realm": "example"}}}},
	{"three challenges", `Newauth realm="apps", Basic, Bearer realm="example.com", error="invalid_token"`,
		[]rawChallenge{{scheme: "Newauth", params: Challenge{"realm": "apps"}}, {scheme: "Basic", params: Challenge{}},
			{scheme: "Bearer", params: Challenge{"realm": "example.com", "error": "invalid_token"}}}},
	{"comma in a quoted string", `Bearer realm="example, with comma", error="invalid_token"`,
		[]rawChallenge{{scheme: "Bearer", params: Challenge{"realm": "example, with comma", "error": "invalid_token"}}}},
	{"escaped quotes", `Bearer realm="example \"foo\" bar"`,
		[]rawChallenge{{scheme: "Bearer", params: Challenge{"realm": `example "foo" bar`}}}},
	{"escaped backslash ends a quoted string", `Basic realm="C:\\", Bearer error="insufficient_scope", scope="files:write"`,
		[]rawChallenge{{scheme: "Basic", params: Challenge{"realm": `C:\`}},
			{scheme: "Bearer", params: Challenge{"error": "insufficient_scope", "scope": "files:write"}}}},
	{"empty quoted strings", `Bearer realm="", error_description="", resource_metadata="https://e.example/rm"`,
		[]rawChallenge{{scheme: "Bearer", params: Challenge{"realm": "", "error_description": "", "resource_metadata": "https://e.example/rm"}}}},
	{"empty list elements", `Bearer , realm="example",, resource_metadata="https://e.example/rm" ,, Basic realm="other",`,
		[]rawChallenge{{scheme: "Bearer", params: Challenge{"realm": "example", "resource_metadata": "https://e.example/rm"}},
			{scheme: "Basic", params: Challenge{"realm": "other"}}}},
	{"case of scheme and names", `BEARER ReAlM="Example", Resource_Metadata="https://e.example/RM"`,
		[]rawChallenge{{scheme: "BEARER", params: Challenge{"realm": "Example", "resource_metadata": "https://e.example/RM"}}}},
	{"unquoted values", `Bearer realm=example.com, error=invalid_token`,
		[]rawChallenge{{scheme: "Bearer", params: Challenge{"realm": "example.com", "error": "invalid_token"}}}},
	{"unquoted url", `Bearer resource_metadata=https://e.example/rm, scope=mcp`,
		[]rawChallenge{{scheme: "Bearer", params: Challenge{"resource_metadata": "https://e.example/rm", "scope": "mcp"}}}},
	{"whitespace around =", "Bearer realm=\"mcp\", scope = \"files:read\", error\t=invalid_token",
		[]rawChallenge{{scheme: "Bearer", params: Challenge{"realm": "mcp", "scope": "files:read", "error": "invalid_token"}}}},
	{"whitespace around = before the next challenge", `Bearer scope = "files:read", Basic realm = "mcp"`,
		[]rawChallenge{{scheme: "Bearer", params: Challenge{"scope": "files:read"}}, {scheme: "Basic", params: Challenge{"realm": "mcp"}}}},
	{"token68 then bearer", `Negotiate YWxhZGRpbjpvcGVuc2VzYW1l==, Bearer realm="x"`,
		[]rawChallenge{{scheme: "Negotiate", token68: "YWxhZGRpbjpvcGVuc2VzYW1l==", params: Challenge{}},
			{scheme: "Bearer", params: Challenge{"realm": "x"}}}},
	{"token68 with its own alphabet", `Custom a-b.c_d~e+f/g=`,
		[]rawChallenge{{scheme: "Custom", token68: "a-b.c_d~e+f/g=", params: Challenge{}}}},
	{"missing value", `Bearer realm=, error="invalid_token"`,
		[]rawChallenge{{scheme: "Bearer", token68: "realm=", params: Challenge{"error": "invalid_token"}}}},
	{"missing value after a parameter", `Bearer error="invalid_token", realm=`,
		[]rawChallenge{{scheme: "Bearer", params: Challenge{"error": "invalid_token"}}}},
	{"missing value before the next challenge", `Bearer error="invalid_token", realm= , Basic`,
		[]rawChallenge{{scheme: "Bearer", params: Challenge{"error": "invalid_token"}}, {scheme: "Basic", params: Challenge{}}}},
	{"unterminated quoted string", `Bearer error="invalid_token", realm="example, scope=x`,
		[]rawChallenge{{scheme: "Bearer", params: Challenge{"error": "invalid_token"}}}},
	{"a parameter inside a quoted string stays inside", `Bearer error="invalid_token", realm="example, resource_metadata="https://evil.example/"`,
		[]rawChallenge{{scheme: "Bearer", params: Challenge{"error": "invalid_token", "realm": "example, resource_metadata="}},
			{scheme: "https", params: Challenge{}}}},
	{"missing comma", `Bearer realm="a" error="b"`,
		[]rawChallenge{{scheme: "Bearer", params: Challenge{"realm": "a", "error": "b"}}}},
	{"initial =", `Bearer ="a", error="x"`,
		[]rawChallenge{{scheme: "Bearer", params: Challenge{"error": "x"}}}},
	{"duplicate parameter: the first counts", `Bearer resource_metadata="https://a.example/rm", Resource_Metadata="https://b.example/rm"`,
		[]rawChallenge{{scheme: "Bearer", params: Challenge{"resource_metadata": "https://a.example/rm"}}}},
	{"junk before a challenge", `"x", =y, Bearer scope="s"`,
		[]rawChallenge{{scheme: "Bearer", params: Challenge{"scope": "s"}}}},
	{"empty", ``, nil},
	{"only separators", " ,\t, ", nil},
}

func TestWWWAuthenticateCases(t *testing.T) {
	for _, tt := range challengeCases {
		t.Run(tt.name, func(t *testing.T) {
			got := splitChallenges(tt.header)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(rawChallenge{})); diff != "" {
				t.Errorf("splitChallenges(%q) (-want +got):\n%s", tt.header, diff)
			}
		})
	}
}

// TestWWWAuthenticateBearer checks which challenge's parameters the OAuth
// client reads: the first Bearer one, in any header line, else none.
func TestWWWAuthenticateBearer(t *testing.T) {
	tests := []struct {
		name   string
		values []string
		want   Challenge
	}{
		{"no header", nil, Challenge{}},
		{"not bearer", []string{`Basic realm="mcp", resource_metadata="https://r.example/rm"`}, Challenge{}},
		{"bearer after basic", []string{`Basic realm="x", Bearer error="insufficient_scope", scope="a b", resource_metadata="https://h/.well-known/x"`},
			Challenge{"error": "insufficient_scope", "scope": "a b", "resource_metadata": "https://h/.well-known/x"}},
		{"bearer in a later header line", []string{`Basic realm="x"`, `bearer scope="s"`}, Challenge{"scope": "s"}},
		{"the first bearer counts", []string{`Bearer scope="a"`, `Bearer scope="b"`}, Challenge{"scope": "a"}},
		{"bearer with token68 only", []string{`Bearer abc=`}, Challenge{}},
		{"dpop only", []string{`DPoP algs="ES256", resource_metadata="https://h/rm"`},
			Challenge{"algs": "ES256", "resource_metadata": "https://h/rm", challengeDPoP: ""}},
		{"dpop nonce", []string{`DPoP error="use_dpop_nonce", error_description="nonce"`},
			Challenge{"error": "use_dpop_nonce", "error_description": "nonce", challengeDPoP: "use_dpop_nonce"}},
		{"bearer's parameters first, dpop's error apart", []string{`Bearer error="invalid_token", scope="a", DPoP error="use_dpop_nonce", algs="ES256"`},
			Challenge{"error": "invalid_token", "scope": "a", "algs": "ES256", challengeDPoP: "use_dpop_nonce"}},
		{"dpop in a later header line", []string{`Bearer scope="a"`, `dpop algs="ES256"`}, Challenge{"scope": "a", "algs": "ES256", challengeDPoP: ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, parseChallenge(tt.values)); diff != "" {
				t.Errorf("parseChallenge(%q) (-want +got):\n%s", tt.values, diff)
			}
		})
	}
	if got := parseChallenge([]string{`Bearer scope=""`}).scopes(); len(got) != 0 {
		t.Errorf("scopes of an empty scope = %q, want none", got)
	}
}

// formatChallenges writes challenges back as one WWW-Authenticate value,
// every parameter quoted.
func formatChallenges(cs []rawChallenge) string {
	var b strings.Builder
	for i, c := range cs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c.scheme)
		sep := " "
		if c.token68 != "" {
			b.WriteString(" " + c.token68)
			sep = ", "
		}
		for _, name := range slices.Sorted(maps.Keys(c.params)) {
			b.WriteString(sep + name + `="`)
			b.WriteString(strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(c.params[name]))
			b.WriteString(`"`)
			sep = ", "
		}
	}
	return b.String()
}

// checkChallenges checks the caps and that what was parsed reads back the
// same once written out.
func checkChallenges(t *testing.T, header string, cs []rawChallenge) {
	t.Helper()
	if len(cs) > maxChallenges {
		t.Fatalf("%d challenges, more than the cap %d", len(cs), maxChallenges)
	}
	size := 0
	for _, c := range cs {
		if len(c.params) > maxChallengeParams {
			t.Fatalf("%d parameters, more than the cap %d", len(c.params), maxChallengeParams)
		}
		if c.scheme == "" {
			t.Fatalf("a challenge without a scheme in %q", header)
		}
		size += len(c.scheme) + len(c.token68)
		for k, v := range c.params {
			size += len(k) + len(v)
		}
	}
	if size > len(header) {
		t.Fatalf("parsed %d bytes out of a %d-byte header", size, len(header))
	}
	out := formatChallenges(cs)
	if diff := cmp.Diff(cs, splitChallenges(out), cmp.AllowUnexported(rawChallenge{})); diff != "" {
		t.Fatalf("%q parsed, written as %q, reads back differently (-first +again):\n%s", header, out, diff)
	}
}

// FuzzWWWAuthenticate checks that any header parses without a panic,
// within the caps, and reads back the same once written out.
func FuzzWWWAuthenticate(f *testing.F) {
	for _, tt := range challengeCases {
		f.Add(tt.header)
	}
	f.Add(`Bearer realm="a\`)
	f.Add(`Basic "\`)
	f.Fuzz(func(t *testing.T, header string) {
		checkChallenges(t, header, splitChallenges(header))
		_ = parseChallenge([]string{header, header})
	})
}

// TestWWWAuthenticateHugeHeader feeds headers of several MiB, as the
// transport's 10 MiB header limit lets a server send: parsing keeps the
// caps and allocates a bounded number of times, whatever the size.
func TestWWWAuthenticateHugeHeader(t *testing.T) {
	const n = 1 << 18
	headers := map[string]string{
		"many parameters":   "Bearer " + strings.Repeat(`a="b", `, n) + `scope="s"`,
		"many distinct":     "Bearer " + manyParams(n),
		"many challenges":   strings.Repeat("Basic, ", n) + `Bearer scope="s"`,
		"many commas":       "Bearer" + strings.Repeat(",", 4*n) + ` scope="s"`,
		"long quoted value": `Bearer realm="` + strings.Repeat(`x\"`, n) + `", scope="s"`,
		"unterminated":      `Bearer realm="` + strings.Repeat(`\,`, n),
		"junk":              "Bearer " + strings.Repeat(`=:;"`, n),
	}
	for name, h := range headers {
		t.Run(name, func(t *testing.T) {
			checkChallenges(t, h, splitChallenges(h))
			allocs := testing.AllocsPerRun(2, func() { parseChallenge([]string{h}) })
			// A map of at most maxChallengeParams entries, its growth, and
			// the strings.Builder of one escaped value.
			if allocs > 64 {
				t.Errorf("parsing a %d-byte header allocated %.0f times, want a bound independent of its size", len(h), allocs)
			}
		})
	}
}

// manyParams returns n parameters with distinct names.
func manyParams(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "p%d=v, ", i)
	}
	return b.String()
}
