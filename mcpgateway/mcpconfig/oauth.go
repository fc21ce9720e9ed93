package mcpconfig

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// Grants a server's "oauth" block may ask for.
const (
	GrantAuthorizationCode = "authorization_code"
	GrantClientCredentials = "client_credentials"
	// GrantJWTBearer presents a JWT the client was given (a workload's
	// identity token: Kubernetes, SPIFFE, a cloud's) as the RFC 7523
	// jwt-bearer grant: workload identity federation (SEP-1933).
	GrantJWTBearer = "jwt_bearer"
	// GrantIDJAG is enterprise-managed authorization (the MCP extension,
	// SEP-990): an ID token from the enterprise IdP is exchanged there
	// (RFC 8693) for an Identity Assertion JWT Authorization Grant, which
	// the client presents as the jwt-bearer grant.
	GrantIDJAG = "id_jag"
)

// grants are the values of oauth.grant, in the order errors name them.
var grants = []string{GrantAuthorizationCode, GrantClientCredentials, GrantJWTBearer, GrantIDJAG}

// Token endpoint client authentication methods (RFC 7591 names).
const (
	AuthClientSecretBasic = "client_secret_basic"
	AuthClientSecretPost  = "client_secret_post"
	AuthPrivateKeyJWT     = "private_key_jwt"
	AuthNone              = "none"
)

// OAuthConfig is a server's "oauth" block in mcp.json (DESIGN.md, "Sign-in
// and per-user credentials"). Every field is optional: without a block, a
// 401 from the server starts discovery all the same, with a dynamically
// registered client. ClientSecret, PrivateKey, Assertion, IDToken and
// IdPClientSecret are secrets (listed in the server's Secrets, never
// shown); so are the contents of AssertionFile and IDTokenFile, which are
// read when a token is needed and never kept in the config.
type OAuthConfig struct {
	// ClientID is a pre-registered client id. An https:// URL with a path
	// names a Client ID Metadata Document, used when the authorization
	// server advertises client_id_metadata_document_supported (else the
	// client registers dynamically). Empty means dynamic registration.
	ClientID string `json:"client_id,omitempty"`
	// ClientSecret goes with a pre-registered ClientID.
	ClientSecret string `json:"-"`
	// Scopes, when set, are asked for instead of those the server names.
	Scopes []string `json:"scopes,omitempty"`
	// Grant is GrantAuthorizationCode (the default: a user signs in),
	// GrantClientCredentials (a service account), GrantJWTBearer (a
	// workload's JWT) or GrantIDJAG (an enterprise IdP's ID token). All but
	// the first need no user and no browser ([OAuthConfig.Unattended]).
	Grant string `json:"grant,omitempty"`
	// ClientAuth is how the client authenticates at the token endpoint:
	// client_secret_basic, client_secret_post, private_key_jwt or none.
	// Empty means what the authorization server offers: private_key_jwt
	// with a PrivateKey, else the secret methods with a ClientSecret, else
	// none.
	ClientAuth string `json:"client_auth,omitempty"`
	// PrivateKey is a PEM private key (PKCS #8, or SEC 1 / PKCS #1) that
	// signs private_key_jwt client assertions (RFC 7523): ES256, ES384 or
	// ES512 for EC keys, RS256 for RSA keys, EdDSA for Ed25519 keys.
	PrivateKey string `json:"-"`
	// RedirectURI, when set, is the redirect URI registered for the
	// client; the CLI listens on it (it must be a loopback http:// URL).
	// Empty means http://127.0.0.1:<free port>/callback (RFC 8252).
	RedirectURI string `json:"redirect_uri,omitempty"`

	// Assertion is the JWT of GrantJWTBearer; AssertionFile, a file
	// holding it, read again for every token (platforms rotate these
	// files). One of the two, with that grant only.
	Assertion     string `json:"-"`
	AssertionFile string `json:"assertion_file,omitempty"`

	// The enterprise IdP of GrantIDJAG. IDToken (or IDTokenFile, read
	// again for every token) is the OpenID Connect ID token it issued,
	// the subject of the token exchange at its token endpoint:
	// IdPTokenEndpoint, else the one its metadata names (IdPIssuer,
	// RFC 8414 or OpenID Connect discovery). IdPClientID (and
	// IdPClientSecret, when the IdP authenticates its clients) is the
	// client the ID token was issued to. ClientID (and ClientSecret or
	// PrivateKey) is the client at the MCP server's authorization server,
	// which the grant names.
	IDToken          string `json:"-"`
	IDTokenFile      string `json:"id_token_file,omitempty"`
	IdPIssuer        string `json:"idp_issuer,omitempty"`
	IdPTokenEndpoint string `json:"idp_token_endpoint,omitempty"`
	IdPClientID      string `json:"idp_client_id,omitempty"`
	IdPClientSecret  string `json:"-"`
}

// EffectiveGrant returns the grant with the default applied.
func (o *OAuthConfig) EffectiveGrant() string {
	if o == nil || o.Grant == "" {
		return GrantAuthorizationCode
	}
	return o.Grant
}

// Unattended reports whether the grant needs no user: client credentials,
// jwt_bearer or id_jag, whose credentials are in the config. Such a server
// gets its token without a browser, and every user shares it.
func (o *OAuthConfig) Unattended() bool {
	switch o.EffectiveGrant() {
	case GrantClientCredentials, GrantJWTBearer, GrantIDJAG:
		return true
	}
	return false
}

// problems checks the block on its own.
func (o *OAuthConfig) problems() []problem {
	if o == nil {
		return nil
	}
	var ps []problem
	if o.Grant != "" && !slices.Contains(grants, o.Grant) {
		ps = append(ps, problem{"oauth.grant", fmt.Sprintf("oauth.grant must be one of %s; got %q", strings.Join(grants, ", "), o.Grant)})
	}
	methods := []string{AuthClientSecretBasic, AuthClientSecretPost, AuthPrivateKeyJWT, AuthNone}
	if o.ClientAuth != "" && !slices.Contains(methods, o.ClientAuth) {
		ps = append(ps, problem{"oauth.client_auth", fmt.Sprintf("oauth.client_auth must be one of client_secret_basic, client_secret_post, private_key_jwt, none; got %q", o.ClientAuth)})
	}
	if o.EffectiveGrant() == GrantClientCredentials {
		if o.ClientID == "" {
			ps = append(ps, problem{"oauth", "oauth.grant client_credentials needs oauth.client_id"})
		}
		if o.ClientSecret == "" && o.PrivateKey == "" {
			ps = append(ps, problem{"oauth", "oauth.grant client_credentials needs oauth.client_secret or oauth.private_key"})
		}
	}
	ps = append(ps, o.assertionProblems()...)
	if o.ClientAuth == AuthPrivateKeyJWT && o.PrivateKey == "" {
		ps = append(ps, problem{"oauth.client_auth", "oauth.client_auth private_key_jwt needs oauth.private_key"})
	}
	if o.PrivateKey != "" {
		if _, _, err := ParseSigningKey(o.PrivateKey); err != nil {
			ps = append(ps, problem{"oauth.private_key", "oauth.private_key: " + err.Error()})
		}
	}
	if o.RedirectURI != "" {
		if u, err := url.Parse(o.RedirectURI); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			ps = append(ps, problem{"oauth.redirect_uri", fmt.Sprintf("oauth.redirect_uri must be an http(s) URL, got %q", o.RedirectURI)})
		}
	}
	return ps
}

// assertionProblems checks the keys of the jwt_bearer and id_jag grants:
// each grant's own, given once, and no other grant's.
func (o *OAuthConfig) assertionProblems() []problem {
	var ps []problem
	grant := o.EffectiveGrant()
	// oneOf asks for exactly one of a value and a file, under grant g.
	oneOf := func(g, key, val, file string) {
		switch {
		case grant != g && (val != "" || file != ""):
			k := key
			if val == "" {
				k += "_file"
			}
			ps = append(ps, problem{"oauth." + k, fmt.Sprintf("oauth.%s is for oauth.grant %s, and the grant is %s", k, g, grant)})
		case grant != g:
		case val == "" && file == "":
			ps = append(ps, problem{"oauth", fmt.Sprintf("oauth.grant %s needs oauth.%s or oauth.%s_file", g, key, key)})
		case val != "" && file != "":
			ps = append(ps, problem{"oauth." + key + "_file", fmt.Sprintf("oauth.%s and oauth.%s_file are both set; give one", key, key)})
		}
	}
	oneOf(GrantJWTBearer, "assertion", o.Assertion, o.AssertionFile)
	if grant == GrantJWTBearer && o.ClientID == "" && (o.ClientSecret != "" || o.PrivateKey != "") {
		ps = append(ps, problem{"oauth", "oauth.grant jwt_bearer with a client_secret or private_key needs oauth.client_id"})
	}
	oneOf(GrantIDJAG, "id_token", o.IDToken, o.IDTokenFile)
	idp := []struct{ key, val string }{
		{"idp_issuer", o.IdPIssuer}, {"idp_token_endpoint", o.IdPTokenEndpoint},
		{"idp_client_id", o.IdPClientID}, {"idp_client_secret", o.IdPClientSecret},
	}
	if grant != GrantIDJAG {
		for _, f := range idp {
			if f.val != "" {
				ps = append(ps, problem{"oauth." + f.key, fmt.Sprintf("oauth.%s is for oauth.grant %s, and the grant is %s", f.key, GrantIDJAG, grant)})
			}
		}
		return ps
	}
	if o.ClientID == "" {
		ps = append(ps, problem{"oauth", "oauth.grant id_jag needs oauth.client_id (the client at the MCP server's authorization server, which the IdP names in the grant)"})
	}
	if o.IdPClientID == "" {
		ps = append(ps, problem{"oauth", "oauth.grant id_jag needs oauth.idp_client_id (the client the IdP issued the ID token to)"})
	}
	if o.IdPIssuer == "" && o.IdPTokenEndpoint == "" {
		ps = append(ps, problem{"oauth", "oauth.grant id_jag needs oauth.idp_issuer or oauth.idp_token_endpoint"})
	}
	for _, f := range idp[:2] {
		if f.val == "" {
			continue
		}
		if u, err := url.Parse(f.val); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Fragment != "" {
			ps = append(ps, problem{"oauth." + f.key, fmt.Sprintf("oauth.%s must be an http(s) URL without a fragment, got %q", f.key, f.val)})
		}
	}
	return ps
}

// equal reports whether a and b are the same block (nil and nil are).
func (o *OAuthConfig) equal(b *OAuthConfig) bool {
	if o == nil || b == nil {
		return o == b
	}
	return o.ClientID == b.ClientID && o.ClientSecret == b.ClientSecret && slices.Equal(o.Scopes, b.Scopes) &&
		o.Grant == b.Grant && o.ClientAuth == b.ClientAuth && o.PrivateKey == b.PrivateKey && o.RedirectURI == b.RedirectURI &&
		o.Assertion == b.Assertion && o.AssertionFile == b.AssertionFile &&
		o.IDToken == b.IDToken && o.IDTokenFile == b.IDTokenFile && o.IdPIssuer == b.IdPIssuer &&
		o.IdPTokenEndpoint == b.IdPTokenEndpoint && o.IdPClientID == b.IdPClientID && o.IdPClientSecret == b.IdPClientSecret
}

// oauth reads a server's "oauth" object. String values take the same
// substitutions as headers; client_secret, private_key, assertion,
// id_token and idp_client_secret are secrets; assertion_file and
// id_token_file are paths, relative to the config's folder.
func (sp *serverParse) oauth(v *jnode) {
	p, name := sp.p, sp.name
	if !p.is(v, jObject, name, "oauth") {
		return
	}
	o := &OAuthConfig{}
	for _, m := range v.members {
		key := "oauth." + m.key
		sp.fieldOff[key] = m.val.off
		if m.key == "scopes" {
			if m.val.kind != jArray {
				p.errAt(m.val.off, name, "oauth.scopes must be an array of strings, got %s", m.val.kind)
				continue
			}
			for _, e := range m.val.elems {
				if e.kind != jString || e.str == "" {
					p.errAt(e.off, name, "oauth.scopes must be an array of strings, got %s in it", e.kind)
					continue
				}
				o.Scopes = append(o.Scopes, e.str)
			}
			continue
		}
		var dst *string
		secret, path := false, false
		switch m.key {
		case "client_id":
			dst = &o.ClientID
		case "client_secret":
			dst, secret = &o.ClientSecret, true
		case "grant":
			dst = &o.Grant
		case "client_auth":
			dst = &o.ClientAuth
		case "private_key":
			dst, secret = &o.PrivateKey, true
		case "redirect_uri":
			dst = &o.RedirectURI
		case "assertion":
			dst, secret = &o.Assertion, true
		case "assertion_file":
			dst, path = &o.AssertionFile, true
		case "id_token":
			dst, secret = &o.IDToken, true
		case "id_token_file":
			dst, path = &o.IDTokenFile, true
		case "idp_issuer":
			dst = &o.IdPIssuer
		case "idp_token_endpoint":
			dst = &o.IdPTokenEndpoint
		case "idp_client_id":
			dst = &o.IdPClientID
		case "idp_client_secret":
			dst, secret = &o.IdPClientSecret, true
		default:
			p.warnAt(m.keyOff, name, "unknown key %q in oauth ignored", m.key)
			continue
		}
		if !p.is(m.val, jString, name, key) {
			continue
		}
		t := sp.expand(m.val)
		if path {
			sp.resolvePath(&t)
		}
		*dst = t.val
		sp.template(key, &t)
		if secret && t.val != "" {
			sp.secrets = append(sp.secrets, t.val)
		}
	}
	sp.s.OAuth = o
}
