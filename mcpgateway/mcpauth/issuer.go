package mcpauth

import (
	"fmt"
	"net/url"
	"strings"
)

// An authorization server is named by its issuer identifier (RFC 8414 §2),
// and the 2026-07-28 specification compares it in two ways:
//   - Which server is it? The issuer a resource's metadata names, the one
//     in that server's own metadata, and the one a token or client
//     registration was obtained from are compared after RFC 3986 §6.2.2-3
//     normalisation (sameIssuer): "https://AS.example:443/" is the same
//     server as "https://as.example", and a token from it is not "another
//     authorization server's".
//   - Did this answer come from it? The iss parameter of an authorization
//     response (RFC 9207) is compared with the issuer recorded from the
//     validated metadata as a simple string (checkIss): the specification
//     forbids case folding, default-port elision and trailing-slash
//     normalisation there, so that an answer naming a look-alike issuer is
//     refused.

// normalIssuer returns issuer in normal form: lower-case scheme and host,
// the default port explicit, no trailing slash. It reports false for what
// is not an absolute URL without query or fragment (RFC 8414 §2).
func normalIssuer(issuer string) (string, bool) {
	u, err := url.Parse(issuer)
	if err != nil || u.Scheme == "" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", false
	}
	return origin(u) + strings.TrimSuffix(u.EscapedPath(), "/"), true
}

// sameIssuer reports whether a and b name the same authorization server.
func sameIssuer(a, b string) bool {
	na, oka := normalIssuer(a)
	nb, okb := normalIssuer(b)
	return oka && okb && na == nb
}

// checkIss applies RFC 9207 §2.4 as the 2026-07-28 specification tables it
// ("Authorization Response Validation") to an authorization response that
// carried iss (empty: none) from the authorization server recorded as
// issuer, whose metadata says advertised about sending it: a present iss
// must be issuer exactly; an absent one is refused only when advertised.
func checkIss(issuer string, advertised bool, iss string) error {
	switch {
	case iss == "" && advertised:
		return fmt.Errorf("the authorization answer comes from issuer \"\", not %q: the authorization server says it sends iss (RFC 9207) and this answer has none; refused as a possible mix-up", issuer)
	case iss != "" && iss != issuer:
		return fmt.Errorf("the authorization answer comes from issuer %q, not %q (RFC 9207 iss, compared exactly); refused as a possible mix-up", iss, issuer)
	}
	return nil
}
