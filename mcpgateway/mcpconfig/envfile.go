package mcpconfig

import (
	"fmt"
	"strings"
)

// envFileError is a problem on one line of a dotenv file. Its message
// names the variable when the line has a valid one and never quotes the
// line or any part of a value: the file holds secrets, and the message
// reaches the terminal, the log and /api/servers.
type envFileError struct {
	line int
	msg  string
}

// parseEnvFile reads a dotenv file as VS Code's envFile does: one
// KEY=VALUE a line, blank lines and lines starting with # skipped, an
// optional "export " prefix, and values that may be double quoted (with
// \n, \t, \" and \\ escapes), single quoted (taken literally) or bare (an
// unquoted " #" starts a comment, surrounding spaces are trimmed). A later
// line overrides an earlier one for the same key. Variable references in
// values are not expanded.
func parseEnvFile(data []byte) (map[string]string, []envFileError) {
	vars := make(map[string]string)
	var errs []envFileError
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		key, val, found := strings.Cut(line, "=")
		key = strings.TrimSpace(key)
		if !found {
			// Without "=" there is no telling a name from a pasted value.
			errs = append(errs, envFileError{i + 1, `no "=" on the line (want KEY=VALUE)`})
			continue
		}
		if !validEnvKey(key) {
			// The text before "=" may be part of a value ("TOKEN: abc=").
			errs = append(errs, envFileError{i + 1, `invalid variable name before "=" (want a letter or _, then letters, digits, _ or .)`})
			continue
		}
		v, err := envValue(strings.TrimSpace(val))
		if err != "" {
			errs = append(errs, envFileError{i + 1, fmt.Sprintf("%s: %s", key, err)})
			continue
		}
		vars[key] = v
	}
	return vars, errs
}

// validEnvKey accepts [A-Za-z_][A-Za-z0-9_.]*.
func validEnvKey(k string) bool {
	for i, r := range k {
		switch {
		case r == '_' || (r >= 'A' && r <= 'Z') || (r >= 'a' && r <= 'z'):
		case i > 0 && ((r >= '0' && r <= '9') || r == '.'):
		default:
			return false
		}
	}
	return k != ""
}

// envValue unquotes one value; the second result says what is wrong.
func envValue(v string) (string, string) {
	if v == "" {
		return "", ""
	}
	switch q := v[0]; q {
	case '\'':
		end := strings.IndexByte(v[1:], '\'')
		if end < 0 {
			return "", "unterminated single quote"
		}
		return v[1 : 1+end], trailing(v[2+end:])
	case '"':
		var b strings.Builder
		for i := 1; i < len(v); i++ {
			c := v[i]
			switch {
			case c == '"':
				return b.String(), trailing(v[i+1:])
			case c == '\\' && i+1 < len(v):
				i++
				switch v[i] {
				case 'n':
					b.WriteByte('\n')
				case 't':
					b.WriteByte('\t')
				case 'r':
					b.WriteByte('\r')
				default:
					b.WriteByte(v[i])
				}
			default:
				b.WriteByte(c)
			}
		}
		return "", "unterminated double quote"
	}
	if i := strings.Index(v, " #"); i >= 0 {
		v = v[:i]
	}
	return strings.TrimSpace(v), ""
}

// trailing reports text after a closing quote other than a comment,
// without quoting it: it may be the rest of a secret.
func trailing(rest string) string {
	rest = strings.TrimSpace(rest)
	if rest == "" || strings.HasPrefix(rest, "#") {
		return ""
	}
	return "unexpected text after the closing quote (quote the whole value, or start a comment with \" #\")"
}
