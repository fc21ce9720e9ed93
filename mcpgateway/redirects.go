package mcpgateway

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// Where the gateway's HTTP requests may go. Go's default redirect policy
// follows ten redirects anywhere, re-posting a 307's body and resending
// the headers the caller set, and the session's authRoundTripper would add
// the token and headers again on every hop. So a request that carries a
// server's credentials (its bearer token, its configured and ${user:}
// headers: the session, the sign-in probe) follows redirects within that
// server's origin only (serverRedirects).

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

// serverRedirects returns the CheckRedirect of requests that carry the
// credentials of the server called name: a redirect within the origin of
// the first request is followed, one to another origin is refused.
func serverRedirects(name string) func(*http.Request, []*http.Request) error {
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

// withRedirects returns a copy of client that follows redirects by check.
func withRedirects(client *http.Client, check func(*http.Request, []*http.Request) error) *http.Client {
	c := *client
	c.CheckRedirect = check
	return &c
}
