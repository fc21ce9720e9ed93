package browsersafety

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
)

// Browser safety (DESIGN.md, "Browser safety"). A web page the operator
// visits can send requests to the service: "simple" cross-origin requests
// (a form post, a text/plain fetch) reach it without a CORS preflight, and a
// DNS-rebinding page, whose own name resolves to 127.0.0.1, can even read
// the answers. Three checks, run on every request before its route, close
// both holes:
//
//   - Host: without API keys, only loopback names and addresses and the
//     listed public hosts are served, so a rebound name gets nothing;
//   - Origin: a state-changing request or a WebSocket upgrade that carries
//     an Origin must come from the service's own origin or a listed one;
//   - Content-Type: a non-empty body must be application/json, which no
//     simple cross-origin request can send.

// hostPolicy decides which Host headers are served. It is immutable after
// New.
type hostPolicy struct {
	// enforce is set without keys, or with keys when public hosts are
	// listed.
	enforce bool
	// keyless says why the check applies, for the error message.
	keyless bool
	// public are the listed hosts, normalised by ParseHosts.
	public []string
}

func newHostPolicy(keyless bool, public []string) hostPolicy {
	norm := make([]string, 0, len(public))
	for _, h := range public {
		if n, err := normalizeHost(h); err == nil {
			norm = append(norm, n)
		}
	}
	return hostPolicy{enforce: keyless || len(norm) > 0, keyless: keyless, public: norm}
}

// allows reports whether the service answers to host (a Host header).
func (p hostPolicy) allows(host string) bool {
	if !p.enforce {
		return true
	}
	name, port := splitHost(host)
	if IsLoopback(name) {
		return true
	}
	for _, h := range p.public {
		pn, pp := splitHost(h)
		if pn == name && (pp == "" || pp == port) {
			return true
		}
	}
	return false
}

// refusal is the 403 for a Host the policy does not allow; it names the
// setting that would allow it.
func (p hostPolicy) refusal(host string) error {
	name, _ := splitHost(host)
	if host == "" {
		name = "NAME"
	}
	why := "it is neither a loopback name nor a listed public host"
	if p.keyless {
		why = "without API keys only loopback names and addresses are served (a guard against DNS rebinding)"
	}
	return refuse(ErrForbidden, fmt.Sprintf(
		"Host %q is not allowed: %s; to serve this name, start elysia serve with --public-host %s or list it in ELYSIA_PUBLIC_HOSTS",
		host, why, name))
}

// IsLoopback reports whether name (a host name or address, lower case,
// without port or brackets) is localhost, a name under .localhost (RFC 6761: browsers
// resolve them to loopback themselves), or a loopback address
// (127.0.0.0/8, ::1).
func IsLoopback(name string) bool {
	name = strings.TrimSuffix(name, ".")
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return true
	}
	ip := net.ParseIP(name)
	return ip != nil && ip.IsLoopback()
}

// splitHost splits a Host header or a listed host into its lower-case name,
// without brackets or a final dot, and its port ("" when none).
func splitHost(host string) (name, port string) {
	host = strings.ToLower(host)
	if h, p, err := net.SplitHostPort(host); err == nil {
		name, port = h, p
	} else {
		name = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	}
	return strings.TrimSuffix(name, "."), port
}

// normalizeHost checks one listed public host (a name or address, with an
// optional port) and returns it in the form splitHost reads.
func normalizeHost(h string) (string, error) {
	h = strings.TrimSpace(h)
	if h == "" || strings.ContainsAny(h, "/@?# \t") {
		return "", fmt.Errorf("public host %q: want a host name or address with an optional port (app.example.com, 10.0.0.5:8000), without scheme or path", h)
	}
	name, port := splitHost(h)
	if name == "" {
		return "", fmt.Errorf("public host %q: empty name", h)
	}
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || strings.Trim(port, "0123456789") != "" {
			return "", fmt.Errorf("public host %q: bad port %q", h, port)
		}
		return net.JoinHostPort(name, port), nil
	}
	if strings.Contains(name, ":") { // an IPv6 address
		return "[" + name + "]", nil
	}
	return name, nil
}

// ParseHosts parses a comma-separated list of public hosts
// (--public-host, ELYSIA_PUBLIC_HOSTS): names or addresses the service
// answers to beside the loopback ones, each with an optional port
// ("app.example.com", "10.0.0.5:8000", "[fe80::1]"). Spaces around entries
// and empty entries are ignored. Names are matched without case; an entry
// without a port matches every port.
func ParseHosts(s string) ([]string, error) {
	var out []string
	for h := range strings.SplitSeq(s, ",") {
		if strings.TrimSpace(h) == "" {
			continue
		}
		n, err := normalizeHost(h)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// originPolicy decides which Origin headers may change state. It is
// immutable after New.
type originPolicy struct {
	// exact are full origins ("https://app.example.com"), lower case,
	// without a default port.
	exact []string
	// patterns are host patterns (path.Match) for the Origin's host[:port].
	patterns []string
}

func newOriginPolicy(allowed []string) originPolicy {
	var p originPolicy
	for _, a := range allowed {
		n, full, err := normalizeOrigin(a)
		switch {
		case err != nil:
		case full:
			p.exact = append(p.exact, n)
		default:
			p.patterns = append(p.patterns, n)
		}
	}
	return p
}

// allows reports whether a request to host (its Host header) may carry
// origin (its Origin header, not empty). An origin is allowed when it is
// the service's own (its host and port equal Host's) or listed; "null", the
// origin of sandboxed frames, files and some redirects, never is.
func (p originPolicy) allows(origin, host string) bool {
	if strings.EqualFold(origin, "null") {
		return false
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	if sameHost(u, host) {
		return true
	}
	full := strings.ToLower(u.Scheme + "://" + u.Host)
	for _, e := range p.exact {
		if full == e || full == e+":"+defaultPort(u.Scheme) {
			return true
		}
	}
	h := strings.ToLower(u.Host)
	for _, pat := range p.patterns {
		if ok, _ := path.Match(pat, h); ok {
			return true
		}
	}
	return false
}

// sameHost reports whether the origin u names the same host and port as the
// Host header host; a missing port is the scheme's default on either side.
func sameHost(u *url.URL, host string) bool {
	on, op := splitHost(u.Host)
	hn, hp := splitHost(host)
	if op == "" {
		op = defaultPort(u.Scheme)
	}
	if hp == "" {
		hp = defaultPort(u.Scheme)
	}
	return on == hn && op == hp
}

func defaultPort(scheme string) string {
	if scheme == "https" {
		return "443"
	}
	return "80"
}

// normalizeOrigin checks one allowed origin. An entry with a scheme is a
// full origin ("https://app.example.com:8443"), returned lower case without
// a default port or final slash; one without is a host pattern as in
// path.Match ("*.example.com", "localhost:3000").
func normalizeOrigin(o string) (norm string, full bool, err error) {
	o = strings.TrimSpace(o)
	switch {
	case o == "":
		return "", false, errors.New("empty origin")
	case strings.EqualFold(o, "null"):
		return "", false, errors.New(`allowed origin "null": the null origin (sandboxed frames, files) is never allowed`)
	case strings.Contains(o, "://"):
		u, err := url.Parse(strings.TrimSuffix(o, "/"))
		if err != nil || u.Host == "" || u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" ||
			(u.Scheme != "http" && u.Scheme != "https") {
			return "", false, fmt.Errorf("allowed origin %q: want scheme://host[:port] with http or https and no path", o)
		}
		n := strings.ToLower(u.Scheme + "://" + u.Host)
		return strings.TrimSuffix(n, ":"+defaultPort(u.Scheme)), true, nil
	}
	p := strings.ToLower(o)
	if strings.ContainsAny(p, "/@?# \t") {
		return "", false, fmt.Errorf("allowed origin %q: want scheme://host[:port] or a host pattern such as *.example.com", o)
	}
	if _, err := path.Match(p, ""); err != nil {
		return "", false, fmt.Errorf("allowed origin %q: %w", o, err)
	}
	return p, false, nil
}

// ParseOrigins parses a comma-separated list of allowed origins
// (ELYSIA_ALLOWED_ORIGINS): full origins ("https://app.example.com", with
// the port when it is not the scheme's default) or host patterns as in
// path.Match, matched against the Origin's host[:port] ("*.example.com",
// "localhost:3000"). "null" is refused. Spaces around entries and empty
// entries are ignored.
func ParseOrigins(s string) ([]string, error) {
	var out []string
	for o := range strings.SplitSeq(s, ",") {
		if strings.TrimSpace(o) == "" {
			continue
		}
		if _, _, err := normalizeOrigin(o); err != nil {
			return nil, err
		}
		out = append(out, strings.TrimSpace(o))
	}
	return out, nil
}

// needsOriginCheck reports whether r changes state or opens a WebSocket:
// every method but GET and HEAD, and any request asking for an upgrade;
// and every request to the MCP endpoint, whose GET opens a stream of a
// session's messages (the MCP specification has servers validate Origin
// on all incoming connections).
func needsOriginCheck(r *http.Request) bool {
	if r.Header.Get("Upgrade") != "" || mcpPaths[r.URL.Path] {
		return true
	}
	return r.Method != http.MethodGet && r.Method != http.MethodHead
}

// mcpPaths are the paths of the MCP endpoint: Streamable HTTP, and the
// legacy SSE transport's stream and messages.
var mcpPaths = map[string]bool{"/mcp": true, "/sse": true, "/message": true}

// Guard runs the three checks on a request. It is immutable and safe for
// concurrent use.
type Guard struct {
	hosts   hostPolicy
	origins originPolicy
}

// New returns the Guard of a service with or without API keys (keyless),
// answering to the loopback names and publicHosts, as ParseHosts returns
// them, and taking state-changing requests from its own origin and
// allowedOrigins, as ParseOrigins returns them. Entries those functions
// would refuse are ignored. Without keys the Host check always applies;
// with keys only when publicHosts is not empty (a keyed service behind a
// proxy needs none).
func New(keyless bool, publicHosts, allowedOrigins []string) *Guard {
	return &Guard{hosts: newHostPolicy(keyless, publicHosts), origins: newOriginPolicy(allowedOrigins)}
}

// Check runs the three checks on r, before its route (and before a 404 or
// 405). A refusal is an error matching ErrForbidden (Host, Origin) or
// ErrUnsupportedMediaType (Content-Type), or ErrUnreadableBody, whose text
// says what to change. A body of unknown length (chunked) is peeked at for
// one byte, which Check puts back by replacing r.Body.
func (g *Guard) Check(r *http.Request) error {
	if !g.hosts.allows(r.Host) {
		return g.hosts.refusal(r.Host)
	}
	if needsOriginCheck(r) {
		if origins := r.Header.Values("Origin"); len(origins) > 1 {
			return refuse(ErrForbidden, "more than one Origin header")
		} else if len(origins) == 1 && !g.origins.allows(origins[0], r.Host) {
			return refuse(ErrForbidden, fmt.Sprintf(
				"Origin %q may not send this request to %q: a web page may change state or open the WebSocket only from the service's own origin, "+
					"or from one listed in ELYSIA_ALLOWED_ORIGINS", origins[0], r.Host))
		}
	}
	return checkContentType(r)
}

// OwnOrigin is the scheme://host of this service under the name r reached
// it by, when that is a loopback name or a listed public host, so that a
// URL built from it (a sign-in's redirect URI) never names a host the
// service does not own. A public host is https unless X-Forwarded-Proto
// says http. For another name the error says how to make the service own
// it, for the caller's message.
func (g *Guard) OwnOrigin(r *http.Request) (string, error) {
	name, port := splitHost(r.Host)
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if IsLoopback(name) {
		return scheme + "://" + r.Host, nil
	}
	for _, h := range g.hosts.public {
		if pn, pp := splitHost(h); pn == name && (pp == "" || pp == port) {
			if r.Header.Get("X-Forwarded-Proto") != "http" {
				scheme = "https"
			}
			return scheme + "://" + r.Host, nil
		}
	}
	return "", errors.New("use a loopback address, or start elysia serve with --public-host " + name)
}

// checkContentType refuses a non-empty body that is not application/json.
// A body of unknown length (chunked) is peeked at for one byte, which is
// then put back.
func checkContentType(r *http.Request) error {
	switch {
	case r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0:
		return nil
	case r.ContentLength < 0:
		var one [1]byte
		n, err := io.ReadFull(r.Body, one[:])
		if n == 0 {
			if err == nil || errors.Is(err, io.EOF) {
				return nil
			}
			return refuse(ErrUnreadableBody, "read request body: "+err.Error())
		}
		r.Body = readCloser{io.MultiReader(bytes.NewReader(one[:n]), r.Body), r.Body}
	}
	ct := r.Header.Get("Content-Type")
	if mt, _, err := mime.ParseMediaType(ct); err == nil && mt == "application/json" {
		return nil
	}
	msg := "missing Content-Type: a request body must be JSON sent as Content-Type: application/json"
	if ct != "" {
		msg = fmt.Sprintf("unsupported Content-Type %q: a request body must be JSON sent as Content-Type: application/json", ct)
	}
	return refuse(ErrUnsupportedMediaType, msg)
}

// readCloser reads from one reader and closes another.
type readCloser struct {
	io.Reader
	io.Closer
}
