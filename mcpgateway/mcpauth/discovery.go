package mcpauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// Discovery follows the MCP authorization spec (2025-11-25, "Authorization
// Server Discovery"): the protected-resource metadata (RFC 9728) named by
// the WWW-Authenticate resource_metadata parameter, else at the well-known
// URIs with and then without the server's path; then the authorization
// server's metadata (RFC 8414, then OpenID Connect discovery, in the
// spec's order). A server with no protected-resource metadata at all is a
// 2025-03-26 server: its origin is the authorization server, with metadata
// there or the default /authorize, /token and /register.

// resourceMeta is protected-resource metadata (RFC 9728 §2).
type resourceMeta struct {
	Resource             string   `json:"resource"`
	AuthorizationServers []string `json:"authorization_servers"`
	ScopesSupported      []string `json:"scopes_supported"`
	// DPoPBoundRequired says the resource takes DPoP-bound tokens only
	// (RFC 9728 §2, dpop_bound_access_tokens_required).
	DPoPBoundRequired bool `json:"dpop_bound_access_tokens_required"`
}

// authServerMeta is authorization-server metadata (RFC 8414 §2), with the
// Client ID Metadata Document flag of the MCP spec.
type authServerMeta struct {
	Issuer                            string   `json:"issuer"`
	AuthorizationEndpoint             string   `json:"authorization_endpoint"`
	TokenEndpoint                     string   `json:"token_endpoint"`
	RegistrationEndpoint              string   `json:"registration_endpoint"`
	RevocationEndpoint                string   `json:"revocation_endpoint"`
	ScopesSupported                   []string `json:"scopes_supported"`
	GrantTypesSupported               []string `json:"grant_types_supported"`
	CodeChallengeMethodsSupported     []string `json:"code_challenge_methods_supported"`
	TokenEndpointAuthMethodsSupported []string `json:"token_endpoint_auth_methods_supported"`
	TokenEndpointAuthSigningAlgs      []string `json:"token_endpoint_auth_signing_alg_values_supported"`
	ClientIDMetadataDocumentSupported bool     `json:"client_id_metadata_document_supported"`
	AuthorizationResponseIssParameter bool     `json:"authorization_response_iss_parameter_supported"`
	DPoPSigningAlgs                   []string `json:"dpop_signing_alg_values_supported"`
	defaultEndpoints                  bool     // no metadata: the 2025-03-26 defaults
}

// authTarget is what discovery found: the resource to ask a token for, the
// scopes the resource offers, and its authorization server.
type authTarget struct {
	resource        string
	scopesSupported []string // the resource's, from its metadata
	as              *authServerMeta
	legacy          bool // no protected-resource metadata: a 2025-03-26 server
	// dpopRequired says the resource takes DPoP-bound tokens only; dpop
	// that the grant asks for one (wantDPoP).
	dpopRequired, dpop bool
}

// metadataLimit bounds a metadata document.
const metadataLimit = 1 << 20

// discover finds serverURL's authorization server from the challenge of
// its 401 (empty when there was none). Each request is bounded by the
// client's timeout.
func discover(ctx context.Context, client *http.Client, serverURL string, ch Challenge) (*authTarget, error) {
	server, err := url.Parse(serverURL)
	if err != nil {
		return nil, fmt.Errorf("server url: %w", err)
	}
	t := &authTarget{}
	prm, err := findResourceMeta(ctx, client, server, ch["resource_metadata"])
	if err != nil {
		return nil, err
	}
	var issuer string
	if prm == nil {
		// 2025-03-26: the MCP server's origin is the authorization server.
		t.legacy = true
		t.resource = canonicalResource(server)
		origin := *server
		origin.Path, origin.RawPath, origin.RawQuery, origin.Fragment = "", "", "", ""
		issuer = origin.String()
	} else {
		t.resource = prm.Resource
		t.scopesSupported = prm.ScopesSupported
		t.dpopRequired = prm.DPoPBoundRequired
		issuer = prm.AuthorizationServers[0]
	}
	t.as, err = findAuthServerMeta(ctx, client, issuer, server, t.legacy)
	if err != nil {
		return nil, err
	}
	if t.dpop, err = wantDPoP(ch, t); err != nil {
		return nil, err
	}
	return t, nil
}

// findResourceMeta fetches the protected-resource metadata: the URL the
// challenge names, then /.well-known/oauth-protected-resource/<path>, then
// /.well-known/oauth-protected-resource. Nil when none answers. Metadata
// whose resource is not this server is refused: a token asked for it
// could be replayed against another server.
func findResourceMeta(ctx context.Context, client *http.Client, server *url.URL, named string) (*resourceMeta, error) {
	var candidates []string
	if named != "" {
		candidates = append(candidates, named)
	}
	wk := *server
	wk.RawQuery, wk.Fragment, wk.RawPath = "", "", ""
	if p := strings.Trim(server.Path, "/"); p != "" {
		wk.Path = "/.well-known/oauth-protected-resource/" + p
		candidates = append(candidates, wk.String())
	}
	wk.Path = "/.well-known/oauth-protected-resource"
	candidates = append(candidates, wk.String())

	for _, u := range candidates {
		var prm resourceMeta
		err := getJSON(ctx, client, u, server, &prm)
		if errors.Is(err, errNotHere) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("protected resource metadata: %w", err)
		}
		switch {
		case prm.Resource == "":
			return nil, fmt.Errorf("protected resource metadata at %s has no resource", u)
		case len(prm.AuthorizationServers) == 0 || prm.AuthorizationServers[0] == "":
			return nil, fmt.Errorf("protected resource metadata at %s names no authorization server", u)
		case !resourceMatches(prm.Resource, server):
			return nil, fmt.Errorf("%w: protected resource metadata at %s is for %q, not for this server", ErrResourceMismatch, u, prm.Resource)
		}
		if err := checkEndpoint(prm.AuthorizationServers[0], server); err != nil {
			return nil, fmt.Errorf("protected resource metadata at %s: authorization server: %w", u, err)
		}
		return &prm, nil
	}
	return nil, nil //nolint:nilnil // no metadata anywhere: a 2025-03-26 server, which the caller handles
}

// authServerMetaURLs are the metadata URLs of issuer, in the order of the
// MCP spec: RFC 8414 (path inserted), OpenID Connect discovery with the
// path inserted, then appended.
func authServerMetaURLs(issuer *url.URL) []string {
	u := *issuer
	u.RawQuery, u.Fragment, u.RawPath = "", "", ""
	p := strings.Trim(issuer.Path, "/")
	if p == "" {
		u.Path = "/.well-known/oauth-authorization-server"
		a := u.String()
		u.Path = "/.well-known/openid-configuration"
		return []string{a, u.String()}
	}
	var out []string
	for _, path := range []string{
		"/.well-known/oauth-authorization-server/" + p,
		"/.well-known/openid-configuration/" + p,
		"/" + p + "/.well-known/openid-configuration",
	} {
		u.Path = path
		out = append(out, u.String())
	}
	return out
}

// findAuthServerMeta fetches the metadata of issuer, the authorization
// server of the MCP server at server. For a 2025-03-26 server without
// metadata it falls back to the default endpoints; otherwise missing
// metadata is an error.
func findAuthServerMeta(ctx context.Context, client *http.Client, issuer string, server *url.URL, legacy bool) (*authServerMeta, error) {
	iu, err := url.Parse(issuer)
	if err != nil || iu.Host == "" {
		return nil, fmt.Errorf("authorization server %q: not a url", issuer)
	}
	urls := authServerMetaURLs(iu)
	for _, u := range urls {
		var m authServerMeta
		err := getJSON(ctx, client, u, server, &m)
		if errors.Is(err, errNotHere) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("authorization server metadata: %w", err)
		}
		// RFC 8414 §3.3: the issuer must be the one asked about, the
		// same server after normalisation (issuer.go); the metadata's
		// own spelling is the one recorded, which an authorization
		// answer's iss must then match exactly. A 2025-03-26 server's
		// metadata sits at its origin and may name a deeper issuer.
		if !legacy && !sameIssuer(m.Issuer, issuer) {
			return nil, fmt.Errorf("authorization server metadata at %s names issuer %q, not %q: refused (RFC 8414 §3.3)", u, m.Issuer, issuer)
		}
		if m.Issuer == "" {
			m.Issuer = issuer
		}
		for _, e := range []struct{ name, val string }{
			{"authorization_endpoint", m.AuthorizationEndpoint}, {"token_endpoint", m.TokenEndpoint},
			{"registration_endpoint", m.RegistrationEndpoint}, {"revocation_endpoint", m.RevocationEndpoint},
		} {
			if e.val == "" {
				continue
			}
			if err := checkEndpoint(e.val, server); err != nil {
				return nil, fmt.Errorf("authorization server metadata at %s: %s: %w", u, e.name, err)
			}
		}
		if m.TokenEndpoint == "" {
			return nil, fmt.Errorf("authorization server metadata at %s has no token_endpoint", u)
		}
		return &m, nil
	}
	if !legacy {
		return nil, fmt.Errorf("authorization server %s publishes no metadata (tried %s)", issuer, strings.Join(urls, ", "))
	}
	base := strings.TrimSuffix(issuer, "/")
	return &authServerMeta{
		Issuer:                        issuer,
		AuthorizationEndpoint:         base + "/authorize",
		TokenEndpoint:                 base + "/token",
		RegistrationEndpoint:          base + "/register",
		CodeChallengeMethodsSupported: []string{"S256"},
		defaultEndpoints:              true,
	}, nil
}

// getJSON GETs u, a metadata URL of the MCP server at server, into v,
// following the redirects whose every hop passes checkEndpoint as u must.
// A 4xx answer is errNotHere; anything else that is not a JSON object is
// an error saying what came back (never the body).
func getJSON(ctx context.Context, client *http.Client, u string, server *url.URL, v any) error {
	if err := checkEndpoint(u, server); err != nil {
		return fmt.Errorf("%s: %w", u, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", u, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := withRedirects(client, discoveryRedirects(server)).Do(req)
	if err != nil {
		return fmt.Errorf("fetch %s: %w", u, unwrapURLError(err))
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode >= 400 && resp.StatusCode < 500 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, metadataLimit))
		return errNotHere
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s", u, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, metadataLimit+1))
	if err != nil {
		return fmt.Errorf("read %s: %w", u, err)
	}
	if len(body) > metadataLimit {
		return fmt.Errorf("%s: metadata larger than %d bytes", u, metadataLimit)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%s: malformed metadata (%s, not a JSON object)", u, contentType(resp))
	}
	return nil
}

// contentType names what a response says it holds.
func contentType(resp *http.Response) string {
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		return ct
	}
	return "no content type"
}

// unwrapURLError drops *url.Error's method and URL, which the caller
// already names.
func unwrapURLError(err error) error {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		return ue.Err
	}
	return err
}

// canonicalResource returns the canonical URI of the server (RFC 8707 as
// the MCP spec applies it): lower-case scheme and host, no fragment, no
// trailing slash.
func canonicalResource(u *url.URL) string {
	c := *u
	c.Scheme = strings.ToLower(c.Scheme)
	c.Host = strings.ToLower(c.Host)
	c.Fragment, c.RawFragment = "", ""
	c.Path = strings.TrimSuffix(c.Path, "/")
	c.RawPath = ""
	return c.String()
}

// resourceMatches reports whether resource, from metadata, covers server:
// the same scheme and host, and the same path or a parent of it.
func resourceMatches(resource string, server *url.URL) bool {
	r, err := url.Parse(resource)
	if err != nil || r.Fragment != "" {
		return false
	}
	if !strings.EqualFold(r.Scheme, server.Scheme) || !strings.EqualFold(r.Host, server.Host) {
		return false
	}
	rp := strings.TrimSuffix(r.Path, "/")
	sp := strings.TrimSuffix(server.Path, "/")
	return rp == sp || strings.HasPrefix(sp, rp+"/")
}

// supportsS256 reports whether the metadata offers PKCE with S256.
func (m *authServerMeta) supportsS256() bool {
	return slices.Contains(m.CodeChallengeMethodsSupported, "S256")
}
