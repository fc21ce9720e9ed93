package mcpauth

import "strings"

// The WWW-Authenticate header (RFC 9110 §11.6.1) comes from the MCP server,
// so it is hostile: any bytes, up to the transport's header limit (10 MiB
// by default). The parser below is one linear pass that never fails: what
// does not fit the grammar is skipped up to the next list comma, and at
// most maxChallenges challenges of maxChallengeParams parameters each are
// kept, so neither time nor memory grows faster than the header.
//
//	challenge  = auth-scheme [ 1*SP ( token68 / #auth-param ) ]
//	auth-param = token BWS "=" BWS ( token / quoted-string )

const (
	// maxChallenges is how many challenges of one header line are read;
	// the rest of the line is ignored.
	maxChallenges = 16
	// maxChallengeParams is how many parameters of one challenge are
	// kept; later ones are skipped.
	maxChallengeParams = 32
)

// Challenge is the Bearer challenge of a WWW-Authenticate header: its
// parameters (error, scope, resource_metadata, ...) by lower-case name.
// A DPoP challenge (RFC 9449 §7.1) adds the parameters the Bearer one
// lacks (all of them when there is no Bearer one), and its error under the
// key "DPoP", which no parameter name (lower case) can be.
type Challenge map[string]string

// challengeDPoP is the key of a DPoP challenge's error in a Challenge.
const challengeDPoP = "DPoP"

// scopes returns the challenge's scope parameter split on spaces.
func (c Challenge) scopes() []string { return strings.Fields(c["scope"]) }

// dpop reports whether the server offered the DPoP scheme.
func (c Challenge) dpop() bool {
	_, ok := c[challengeDPoP]
	return ok
}

// dpopNonce reports whether the DPoP challenge asks for a nonce
// (use_dpop_nonce, RFC 9449 §9).
func (c Challenge) dpopNonce() bool { return c[challengeDPoP] == "use_dpop_nonce" }

// parseChallenge returns the parameters of the first Bearer challenge in
// the WWW-Authenticate header values, with those of the first DPoP one as
// Challenge says; an empty challenge when there is neither.
func parseChallenge(values []string) Challenge {
	var bearer, dpop Challenge
	for _, v := range values {
		for _, c := range splitChallenges(v) {
			switch {
			case bearer == nil && strings.EqualFold(c.scheme, "bearer"):
				bearer = c.params
			case dpop == nil && strings.EqualFold(c.scheme, "dpop"):
				dpop = c.params
			}
		}
	}
	out := bearer
	if out == nil {
		out = Challenge{}
	}
	if dpop != nil {
		for k, v := range dpop {
			if _, ok := out[k]; !ok {
				out[k] = v
			}
		}
		out[challengeDPoP] = dpop["error"]
	}
	return out
}

// rawChallenge is one challenge: its scheme as sent, its token68 if it
// has one, and its parameters by lower-case name (the first of a
// duplicated name counts).
type rawChallenge struct {
	scheme  string
	token68 string
	params  Challenge
}

// splitChallenges parses one WWW-Authenticate value into its challenges.
func splitChallenges(s string) []rawChallenge {
	p := challengeParser{s: s}
	var out []rawChallenge
	for len(out) < maxChallenges {
		p.skipSeparators()
		if p.i >= len(s) {
			break
		}
		scheme := p.token()
		if scheme == "" {
			p.skipElement() // not a challenge: junk up to the next comma
			continue
		}
		c := rawChallenge{scheme: scheme, params: Challenge{}}
		if p.ows() > 0 {
			c.token68 = p.token68()
		}
		p.params(c.params)
		out = append(out, c)
	}
	return out
}

// challengeParser reads s from i.
type challengeParser struct {
	s string
	i int
}

// params reads the auth-params of one challenge into dst, up to the start
// of the next challenge (a token not followed by "=") or the end.
func (p *challengeParser) params(dst Challenge) {
	for {
		save := p.i
		p.skipSeparators()
		if p.i >= len(p.s) {
			return
		}
		name := p.token()
		if name == "" {
			p.skipElement() // junk in the list: skip this element only
			continue
		}
		p.ows()
		if p.i >= len(p.s) || p.s[p.i] != '=' {
			p.i = save // the next challenge starts here
			return
		}
		p.i++
		p.ows()
		val, ok := p.value()
		if !ok {
			p.skipElement() // a missing value or an unterminated string
			continue
		}
		name = strings.ToLower(name)
		if _, dup := dst[name]; !dup && len(dst) < maxChallengeParams {
			dst[name] = val
		}
	}
}

// value reads a quoted string or an unquoted value (lenient: anything up
// to whitespace, a comma or a quote, so an unquoted URL reads whole). It
// reports false for an empty unquoted value and an unterminated string.
func (p *challengeParser) value() (string, bool) {
	s := p.s
	if p.i < len(s) && s[p.i] == '"' {
		return p.quoted()
	}
	start := p.i
	for p.i < len(s) && !strings.ContainsRune(" \t,\"", rune(s[p.i])) {
		p.i++
	}
	return s[start:p.i], p.i > start
}

// quoted reads a quoted-string at i, unescaping quoted-pairs.
func (p *challengeParser) quoted() (string, bool) {
	s := p.s
	p.i++ // opening quote
	start := p.i
	// Most values have no escapes: return a substring, no copy.
	for p.i < len(s) && s[p.i] != '"' && s[p.i] != '\\' {
		p.i++
	}
	if p.i < len(s) && s[p.i] == '"' {
		p.i++
		return s[start : p.i-1], true
	}
	var b strings.Builder
	b.WriteString(s[start:p.i])
	for p.i < len(s) && s[p.i] != '"' {
		if s[p.i] == '\\' && p.i+1 < len(s) {
			p.i++
		}
		b.WriteByte(s[p.i])
		p.i++
	}
	if p.i >= len(s) {
		return "", false
	}
	p.i++ // closing quote
	return b.String(), true
}

// token68 reads a token68 at i when one is there: its characters, then
// any "=", then the end of the element. Otherwise it reads nothing.
func (p *challengeParser) token68() string {
	s, j := p.s, p.i
	for j < len(s) && isToken68Char(s[j]) {
		j++
	}
	if j == p.i {
		return ""
	}
	for j < len(s) && s[j] == '=' {
		j++
	}
	end := j
	for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
		j++
	}
	if j < len(s) && s[j] != ',' {
		return "" // an auth-param, or junk the param loop skips
	}
	t := s[p.i:end]
	p.i = j
	return t
}

// token reads a token (RFC 9110 §5.6.2) at i.
func (p *challengeParser) token() string {
	start := p.i
	for p.i < len(p.s) && isTokenChar(p.s[p.i]) {
		p.i++
	}
	return p.s[start:p.i]
}

// ows skips spaces and tabs and returns how many.
func (p *challengeParser) ows() int {
	start := p.i
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
	return p.i - start
}

// skipSeparators skips whitespace and commas: empty list elements are
// allowed (RFC 9110 §5.6.1.2).
func (p *challengeParser) skipSeparators() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == ',') {
		p.i++
	}
}

// skipElement skips to the next comma outside a quoted string, or to
// the end.
func (p *challengeParser) skipElement() {
	s := p.s
	for p.i < len(s) && s[p.i] != ',' {
		if s[p.i] == '"' {
			p.i++
			for p.i < len(s) && s[p.i] != '"' {
				if s[p.i] == '\\' {
					p.i++
				}
				p.i++
			}
		}
		p.i++
	}
	p.i = min(p.i, len(s)) // a backslash at the very end
}

func isTokenChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

func isToken68Char(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		strings.IndexByte("-._~+/", c) >= 0
}
