package mcpauth

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Where the gateway's HTTP requests may go. Go's default redirect policy
// follows ten redirects anywhere, re-posting a 307's body and resending
// the headers the caller set, and the session's authRoundTripper would add
// the token and headers again on every hop. So:
//   - a request that carries a server's credentials (its bearer token, its
//     configured and ${user:} headers: the session, the sign-in probe)
//     follows redirects within that server's origin only (ServerRedirects);
//   - a token, registration or revocation request (a code and its
//     verifier, a client secret, a token) follows none (noRedirects);
//   - a discovery fetch, which carries nothing, follows those whose every
//     hop passes the endpoint check of its first URL (discoveryRedirects).
//
// The endpoint check (checkEndpoint) keeps discovery, and the codes,
// secrets and tokens of the OAuth requests, on https, or on loopback http
// for a server that is itself on loopback.

// maxRedirects bounds the redirects one request follows, as net/http's
// default policy does.
const maxRedirects = 10

// origin returns u's origin (RFC 6454): scheme, host and port, in lower
// case, with the scheme's default port made explicit.
func origin(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		switch scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// sameOrigin reports whether a and b have the same origin.
func sameOrigin(a, b *url.URL) bool { return origin(a) == origin(b) }

// endpointName names u in an error: its origin and path, without user
// information, query or fragment, where a secret could sit.
func endpointName(u *url.URL) string { return origin(u) + u.EscapedPath() }

// ServerRedirects returns the CheckRedirect of requests that carry the
// credentials of the server called name: a redirect within the origin of
// the first request is followed, one to another origin is refused.
func ServerRedirects(name string) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) >= maxRedirects {
			return fmt.Errorf("server %q: stopped after %d redirects", name, maxRedirects)
		}
		if !sameOrigin(req.URL, via[0].URL) {
			return fmt.Errorf("%w: server %q redirected to another origin (%q); its token and headers go to its own origin only",
				ErrRedirectRefused, name, origin(req.URL))
		}
		return nil
	}
}

// noRedirects is the CheckRedirect of token, registration and revocation
// requests: following a 307 would post their body again to wherever it
// points. The error names the endpoint and its answer.
func noRedirects(req *http.Request, via []*http.Request) error {
	answer := "a redirect"
	if req.Response != nil {
		answer = fmt.Sprintf("%d %s", req.Response.StatusCode, http.StatusText(req.Response.StatusCode))
	}
	return fmt.Errorf("%w: %s answered %s; a request carrying credentials follows no redirect",
		ErrRedirectRefused, endpointName(via[0].URL), answer)
}

// discoveryRedirects returns the CheckRedirect of discovery fetches for
// the MCP server at server: every hop must pass checkEndpoint, as the
// first URL did.
func discoveryRedirects(server *url.URL) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		from := endpointName(via[len(via)-1].URL)
		if len(via) >= maxRedirects {
			return fmt.Errorf("%s: stopped after %d redirects", from, maxRedirects)
		}
		if err := checkEndpoint(req.URL.String(), server); err != nil {
			return fmt.Errorf("%w: %s redirected: %w", ErrRedirectRefused, from, err)
		}
		return nil
	}
}

// withRedirects returns a copy of client that follows redirects by check.
func withRedirects(client *http.Client, check func(*http.Request, []*http.Request) error) *http.Client {
	c := *client
	c.CheckRedirect = check
	return &c
}

// newOAuthClient returns the client of an authorizer's OAuth requests:
// each bounded by timeout, none following a redirect (getJSON and probe
// set their own rules on a copy).
func newOAuthClient(timeout time.Duration, base http.RoundTripper) *http.Client {
	return &http.Client{Timeout: timeout, Transport: base, CheckRedirect: noRedirects}
}

// checkEndpoint refuses the URLs that discovery must not fetch, and a
// token, code or secret must not travel to, for the MCP server at server:
// anything but https, or http on a loopback host (RFC 8252 §8.3: tests
// and local servers); and a local host at all (loopback, unspecified,
// .localhost) unless server is itself on loopback, so that a remote server
// cannot point the gateway at services on the gateway's own machine.
func checkEndpoint(raw string, server *url.URL) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Host == "":
		return fmt.Errorf("%q is not a url", raw)
	case isLocal(u.Hostname()) && !isLoopback(server.Hostname()):
		return fmt.Errorf("%q is on this machine, and the server is not", raw)
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && isLoopback(u.Hostname()):
		return nil
	}
	return fmt.Errorf("%q is neither https nor http on a loopback address", raw)
}

// isLoopback reports whether host is localhost or a loopback address.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// isLocal reports whether host names this machine: a loopback host, an
// unspecified address (0.0.0.0 and :: reach local services) or a name
// under .localhost (RFC 6761 §6.3).
func isLocal(host string) bool {
	name := strings.ToLower(strings.TrimSuffix(host, "."))
	if isLoopback(name) || strings.HasSuffix(name, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsUnspecified()
}
