package mcpregistry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// DefaultURL is the official MCP Registry.
const DefaultURL = "https://registry.modelcontextprotocol.io"

// Defaults of Options.
const (
	DefaultTimeout     = 15 * time.Second
	DefaultMaxResponse = 4 << 20
	// DefaultLimit is how many servers Search returns when asked for 0.
	DefaultLimit = 30
	// maxPageSize is the largest page the official registry serves.
	maxPageSize = 100
	// maxPages bounds how many pages one Search follows.
	maxPages = 20
)

// Options configures a Client. A nil *Options means the defaults below;
// the struct is copied on entry.
type Options struct {
	// HTTPClient sends the requests. Nil means a client of the Client's
	// own that follows at most five redirects and never from https to
	// http. Its Timeout, if any, applies on top of Timeout.
	HTTPClient *http.Client
	// Timeout bounds each request, from dialling to reading the last byte
	// of the answer. Zero means DefaultTimeout (15 s).
	Timeout time.Duration
	// MaxResponse bounds the bytes read of one answer; a longer one is an
	// error. Zero means DefaultMaxResponse (4 MiB).
	MaxResponse int64
}

// Client reads one registry. It is safe for concurrent use and holds no
// resources of its own beyond its HTTP client's idle connections.
type Client struct {
	base *url.URL
	http *http.Client
	opts Options
}

// New returns a client of the registry at baseURL (http or https; a
// trailing slash is ignored). It does no I/O; an unusable URL is an error.
func New(baseURL string, opts *Options) (*Client, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxResponse <= 0 {
		o.MaxResponse = DefaultMaxResponse
	}
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || hasControl(baseURL) {
		return nil, fmt.Errorf("registry URL %q: want http:// or https:// and a host, without credentials", baseURL)
	}
	u.RawQuery, u.Fragment = "", ""
	hc := o.HTTPClient
	if hc == nil {
		hc = &http.Client{
			Transport: &http.Transport{
				Proxy:                 http.ProxyFromEnvironment,
				DialContext:           (&net.Dialer{Timeout: o.Timeout}).DialContext,
				TLSHandshakeTimeout:   o.Timeout,
				ResponseHeaderTimeout: o.Timeout,
				MaxIdleConns:          4,
				IdleConnTimeout:       30 * time.Second,
			},
			CheckRedirect: func(req *http.Request, via []*http.Request) error {
				if len(via) >= 5 {
					return errors.New("stopped after 5 redirects")
				}
				if via[0].URL.Scheme == "https" && req.URL.Scheme != "https" {
					return errors.New("redirected from https to " + req.URL.Scheme)
				}
				return nil
			},
		}
	}
	return &Client{base: u, http: hc, opts: o}, nil
}

// URL returns the registry's base URL.
func (c *Client) URL() string { return c.base.String() }

// Search returns the latest version of the servers whose name contains
// query (the registry's search; "" lists every server), at most limit of
// them (0 means DefaultLimit), in the registry's order, following its pages.
func (c *Client) Search(ctx context.Context, query string, limit int) ([]Record, error) {
	if limit <= 0 {
		limit = DefaultLimit
	}
	if hasControl(query) {
		return nil, errors.New("search words must not hold control characters")
	}
	var out []Record
	seen := map[string]bool{}
	cursor := ""
	for range maxPages {
		q := url.Values{"version": {"latest"}, "limit": {strconv.Itoa(min(limit-len(out), maxPageSize))}}
		if query != "" {
			q.Set("search", query)
		}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var page struct {
			Servers  *[]recordJSON `json:"servers"`
			Metadata struct {
				NextCursor string `json:"nextCursor"`
			} `json:"metadata"`
		}
		if err := c.get(ctx, "/v0.1/servers", q, &page); err != nil {
			return nil, err
		}
		if page.Servers == nil {
			return nil, c.garbage("/v0.1/servers", errors.New(`no "servers" list`))
		}
		for _, r := range *page.Servers {
			out = append(out, r.record())
			if len(out) == limit {
				return out, nil
			}
		}
		next := page.Metadata.NextCursor
		if next == "" || seen[next] || len(*page.Servers) == 0 {
			return out, nil
		}
		seen[next] = true
		cursor = next
	}
	return out, nil
}

// Get returns one version of the server called name; "" or "latest" means
// its latest version. A server or version the registry does not have is
// an error matching ErrNotFound; an answer about another server than the
// one asked for is an error too.
func (c *Client) Get(ctx context.Context, name, version string) (*Record, error) {
	if version == "" {
		version = "latest"
	}
	if err := checkServerName(name); err != nil {
		return nil, err
	}
	if err := checkVersion(version); err != nil {
		return nil, fmt.Errorf("version %q: %w", version, err)
	}
	path := "/v0.1/servers/" + url.PathEscape(name) + "/versions/" + url.PathEscape(version)
	var r recordJSON
	if err := c.get(ctx, path, nil, &r); err != nil {
		if errors.Is(err, errStatusNotFound) {
			what := "server " + strconv.Quote(name)
			if version != "latest" {
				what += " version " + strconv.Quote(version)
			}
			return nil, fmt.Errorf("%s: %w at %s", what, ErrNotFound, c.base)
		}
		return nil, err
	}
	rec := r.record()
	switch {
	case rec.Server.Name == "":
		return nil, c.garbage(path, errors.New("no server name"))
	case rec.Server.Name != name:
		return nil, c.garbage(path, fmt.Errorf("asked for %q, got %q", name, termSafe(rec.Server.Name)))
	case version != "latest" && rec.Server.Version != version:
		return nil, c.garbage(path, fmt.Errorf("asked for version %q, got %q", version, termSafe(rec.Server.Version)))
	}
	return &rec, nil
}

// errStatusNotFound is a 404 from the registry.
var errStatusNotFound = errors.New("404 not found")

// get sends GET path?q and decodes the JSON answer into v.
func (c *Client) get(ctx context.Context, path string, q url.Values, v any) error {
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	u := *c.base
	u.Path = c.base.Path + path
	if unescaped, err := url.PathUnescape(u.Path); err == nil {
		u.RawPath, u.Path = u.Path, unescaped
	}
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return fmt.Errorf("registry at %s: %w", c.base, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return c.unreachable(ctx, err)
	}
	defer func() { _ = resp.Body.Close() }() // read to the end or to the cap below
	body, err := io.ReadAll(io.LimitReader(resp.Body, c.opts.MaxResponse+1))
	if err != nil {
		return c.unreachable(ctx, err)
	}
	if int64(len(body)) > c.opts.MaxResponse {
		return fmt.Errorf("%w: the registry at %s answered GET %s with more than %d bytes; refused", ErrBadAnswer, c.base, path, c.opts.MaxResponse)
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return errStatusNotFound
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("%w: the registry at %s answered GET %s with %s%s", ErrBadAnswer, c.base, path, resp.Status, problemDetail(body))
	}
	if err := json.Unmarshal(body, v); err != nil {
		return c.garbage(path, err)
	}
	return nil
}

// unreachable describes a failed request: a timeout says how long was
// waited, whichever of the request's deadline and the transport's own
// (the dial's, the headers') ran out first.
func (c *Client) unreachable(ctx context.Context, err error) error {
	var ne net.Error
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("%w: the registry at %s did not answer within %v", ErrUnreachable, c.base, c.opts.Timeout)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("%w: the registry at %s: %v", ErrUnreachable, c.base, err)
}

// garbage is an answer that is not the registry API's.
func (c *Client) garbage(path string, err error) error {
	return fmt.Errorf("%w: the registry at %s answered GET %s with something other than the MCP Registry API (v0.1): %v", ErrBadAnswer, c.base, path, err)
}

// problemDetail quotes the "detail" or "error" of an error answer, short
// and without control characters.
func problemDetail(body []byte) string {
	var p struct {
		Detail string `json:"detail"`
		Error  string `json:"error"`
	}
	if json.Unmarshal(body, &p) != nil {
		return ""
	}
	d := p.Detail
	if d == "" {
		d = p.Error
	}
	if d = termSafe(d); d == "" {
		return ""
	}
	if len(d) > 200 {
		d = d[:200] + "…"
	}
	return ": " + d
}

// recordJSON is a ServerResponse of the API.
type recordJSON struct {
	Server Server `json:"server"`
	Meta   struct {
		Official *struct {
			Status        string `json:"status"`
			StatusMessage string `json:"statusMessage"`
			PublishedAt   string `json:"publishedAt"`
			IsLatest      bool   `json:"isLatest"`
		} `json:"io.modelcontextprotocol.registry/official"`
	} `json:"_meta"`
}

func (r recordJSON) record() Record {
	rec := Record{Server: r.Server}
	if o := r.Meta.Official; o != nil {
		rec.Status, rec.StatusMessage, rec.IsLatest, rec.PublishedAt = o.Status, o.StatusMessage, o.IsLatest, o.PublishedAt
	}
	return rec
}
