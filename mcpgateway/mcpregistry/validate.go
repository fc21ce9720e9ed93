package mcpregistry

import (
	"errors"
	"net/url"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Patterns of what a server.json names. Each refuses a leading "-", so
// that no name can be read as a flag by npx, uvx or docker.
var (
	// serverName is the registry's pattern for a server's name.
	serverName = regexp.MustCompile(`^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$`)
	// versionText is a version: "1.2.3", "2.0.0-beta.1+build.5", "2026.8.31".
	versionText = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.+_-]{0,127}$`)
	// npmName is an npm package name, scoped or not.
	npmName = regexp.MustCompile(`^(@[A-Za-z0-9][A-Za-z0-9._~-]*/)?[A-Za-z0-9][A-Za-z0-9._~-]*$`)
	// pypiName is a PyPI project name (PEP 508).
	pypiName = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$`)
	// ociImage is an image reference: [host[:port]/]path[:tag][@digest].
	ociImage = regexp.MustCompile(`^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]{1,5})?(/[a-z0-9]+([._-]+[a-z0-9]+)*)*(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[a-f0-9]{64})?$`)
	// envVarName is an environment variable's name.
	envVarName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// headerName is an HTTP header's name (an RFC 9110 token).
	headerName = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
	// variableName is the name of a {variable} in a value or URL
	// template, or an argument's valueHint.
	variableName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)
	// flagName is a named argument's name: "--port", "-e".
	flagName = regexp.MustCompile(`^-{1,2}[A-Za-z0-9][A-Za-z0-9._-]*$`)
	// entryName is a server's name in mcp.json as add writes it.
	entryName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
)

// deniedRuntimeFlags are the runtime arguments refused per registry type:
// those that would run a shell (npx -c), run another package than the one
// named (npx -p, uvx --from, --with) or from another index, or hand a
// container the host (docker --privileged).
var deniedRuntimeFlags = map[string][]string{
	"npm":  {"-c", "--call", "--shell", "--script-shell", "-p", "--package", "--registry", "--prefix", "--userconfig", "--globalconfig"},
	"pypi": {"--from", "--with", "--with-editable", "--with-requirements", "-i", "--index", "--index-url", "--extra-index-url", "--default-index", "-f", "--find-links", "--python-preference"},
	"oci":  {"--privileged", "--cap-add", "--security-opt", "--pid", "--ipc", "--userns", "--uts", "--device", "--volumes-from", "--cgroupns", "--entrypoint"},
}

// deniedFlag reports whether arg (a runtime argument's text) is one of the
// flags denied for registry type t, alone or as "--flag=value".
func deniedFlag(t, arg string) bool {
	name, _, _ := strings.Cut(arg, "=")
	for _, d := range deniedRuntimeFlags[t] {
		if name == d {
			return true
		}
	}
	return false
}

// badRune reports whether r may not appear in anything written into
// mcp.json from a registry: control characters, line and paragraph
// separators, and invisible format characters (zero-width, bidirectional
// controls, the tag block), which could hide what an entry does.
func badRune(r rune) bool {
	return r == utf8.RuneError || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029'
}

// hasControl reports whether s holds a bad rune or is not UTF-8.
func hasControl(s string) bool {
	if !utf8.ValidString(s) {
		return true
	}
	return strings.IndexFunc(s, badRune) >= 0
}

// termSafe drops the bad runes of s, for messages.
func termSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if badRune(r) {
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, ""))
}

// textProblem says why s, a value from a server.json, cannot be written
// into mcp.json, or "": a control character, or a "${" that mcp.json would
// substitute (a server.json must not read the service's environment
// variables or another server's inputs).
func textProblem(s string) string {
	switch {
	case hasControl(s):
		return "holds a control or invisible character"
	case strings.Contains(s, "${"):
		return `holds "${", which mcp.json would substitute`
	case len(s) > 4096:
		return "is longer than 4096 bytes"
	}
	return ""
}

func checkServerName(name string) error {
	if len(name) < 3 || len(name) > 200 || !serverName.MatchString(name) {
		return errors.New("server name " + quote(name) + ": want reverse-DNS with one slash, such as io.github.user/weather")
	}
	return nil
}

func checkVersion(v string) error {
	if !versionText.MatchString(v) {
		return errors.New("want letters, digits, '.', '+', '_' or '-'")
	}
	return nil
}

// urlProblem says why u (a remote's URL after its variables are filled in)
// cannot be used, or "".
func urlProblem(u string) string {
	if p := textProblem(u); p != "" {
		return p
	}
	if strings.ContainsAny(u, " \t") {
		return "holds white space"
	}
	parsed, err := url.Parse(u)
	switch {
	case err != nil:
		return "not a URL"
	case parsed.Scheme != "https" && parsed.Scheme != "http":
		return "want an https:// (or http://) URL"
	case parsed.Host == "" || parsed.Hostname() == "":
		return "has no host"
	case parsed.User != nil:
		return "holds credentials"
	case parsed.Fragment != "":
		return "has a fragment"
	}
	return ""
}

// quote quotes s safely for a message.
func quote(s string) string {
	if len(s) > 100 {
		s = s[:100] + "…"
	}
	return `"` + strings.ReplaceAll(termSafe(s), `"`, `\"`) + `"`
}
