package mcpconfig

import (
	"fmt"
	"net/url"
	"slices"
)

// Grants a server's "oauth" block may ask for.
const (
	GrantAuthorizationCode = "authorization_code"
	GrantClientCredentials = "client_credentials"
)

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
// registered client. ClientSecret and PrivateKey are secrets (listed in the
// server's Secrets, never shown).
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
	// Grant is GrantAuthorizationCode (the default: a user signs in) or
	// GrantClientCredentials (a service account; no user, no browser).
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
}

// EffectiveGrant returns the grant with the default applied.
func (o *OAuthConfig) EffectiveGrant() string {
	if o == nil || o.Grant == "" {
		return GrantAuthorizationCode
	}
	return o.Grant
}

// problems checks the block on its own.
func (o *OAuthConfig) problems() []problem {
	if o == nil {
		return nil
	}
	var ps []problem
	if o.Grant != "" && o.Grant != GrantAuthorizationCode && o.Grant != GrantClientCredentials {
		ps = append(ps, problem{"oauth.grant", fmt.Sprintf("oauth.grant must be %q or %q, got %q", GrantAuthorizationCode, GrantClientCredentials, o.Grant)})
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

// equal reports whether a and b are the same block (nil and nil are).
func (o *OAuthConfig) equal(b *OAuthConfig) bool {
	if o == nil || b == nil {
		return o == b
	}
	return o.ClientID == b.ClientID && o.ClientSecret == b.ClientSecret && slices.Equal(o.Scopes, b.Scopes) &&
		o.Grant == b.Grant && o.ClientAuth == b.ClientAuth && o.PrivateKey == b.PrivateKey && o.RedirectURI == b.RedirectURI
}

// oauth reads a server's "oauth" object. String values take the same
// substitutions as headers; client_secret and private_key are secrets.
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
		secret := false
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
		default:
			p.warnAt(m.keyOff, name, "unknown key %q in oauth ignored", m.key)
			continue
		}
		if !p.is(m.val, jString, name, key) {
			continue
		}
		t := sp.expand(m.val)
		*dst = t.val
		sp.template(key, &t)
		if secret && t.val != "" {
			sp.secrets = append(sp.secrets, t.val)
		}
	}
	sp.s.OAuth = o
}
