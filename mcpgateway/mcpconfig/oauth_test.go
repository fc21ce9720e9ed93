package mcpconfig

import (
	"slices"
	"strings"
	"testing"
)

// TestOAuthAssertionGrants reads the jwt_bearer and id_jag blocks: paths
// relative to the config's folder, the credentials secrets (substituted
// or written), and both grants unattended.
func TestOAuthAssertionGrants(t *testing.T) {
	cfg := parseOK(t, `{"servers": {
		"wif": {"url": "https://mcp.example/mcp", "oauth": {"grant": "jwt_bearer", "assertion_file": "run/token"}},
		"wif2": {"url": "https://mcp.example/mcp", "oauth": {"grant": "jwt_bearer", "assertion": "${env:WORKLOAD_JWT}"}},
		"ema": {"url": "https://mcp.example/mcp", "oauth": {"grant": "id_jag", "client_id": "c", "client_secret": "s3cret",
			"id_token": "${env:ID_TOKEN}", "idp_issuer": "https://idp.example", "idp_client_id": "ic",
			"idp_client_secret": "idp-s3cret", "scopes": ["chat.read"]}}}}`,
		map[string]string{"WORKLOAD_JWT": "workload.jwt.value", "ID_TOKEN": "id.token.value"})
	byName := map[string]ServerConfig{}
	for _, s := range cfg.Servers {
		byName[s.Name] = s
	}
	if o := byName["wif"].OAuth; o.AssertionFile != "/base/run/token" || !o.Unattended() {
		t.Errorf("wif: assertion_file %q, unattended %v; want /base/run/token, true", o.AssertionFile, o.Unattended())
	}
	if s := byName["wif2"]; s.OAuth.Assertion != "workload.jwt.value" || !slices.Contains(s.Secrets, "workload.jwt.value") {
		t.Errorf("wif2: assertion %q, secrets %d; want the substituted value, a secret", s.OAuth.Assertion, len(s.Secrets))
	}
	s := byName["ema"]
	o := s.OAuth
	if o.IDToken != "id.token.value" || o.IdPIssuer != "https://idp.example" || o.IdPClientID != "ic" || !o.Unattended() {
		t.Errorf("ema: %+v; want the id_jag block read", *o)
	}
	for _, secret := range []string{"id.token.value", "s3cret", "idp-s3cret"} {
		if !slices.Contains(s.Secrets, secret) {
			t.Errorf("ema: %q is not among the secrets", secret)
		}
	}
	for _, g := range []string{"", GrantAuthorizationCode} {
		if (&OAuthConfig{Grant: g}).Unattended() {
			t.Errorf("grant %q is unattended; want a user", g)
		}
	}
}

// TestOAuthAssertionGrantErrors: each wrong block is refused with an
// error that names the key and says what is wanted, never the secret.
func TestOAuthAssertionGrantErrors(t *testing.T) {
	tests := []struct {
		name, oauth, want string
	}{
		{"unknown grant", `{"grant": "password"}`, `oauth.grant must be one of authorization_code, client_credentials, jwt_bearer, id_jag; got "password"`},
		{"jwt_bearer without assertion", `{"grant": "jwt_bearer"}`, "oauth.grant jwt_bearer needs oauth.assertion or oauth.assertion_file"},
		{"both", `{"grant": "jwt_bearer", "assertion": "a.b.c", "assertion_file": "/t"}`, "oauth.assertion and oauth.assertion_file are both set; give one"},
		{"assertion with another grant", `{"client_id": "c", "assertion": "a.b.c"}`, "oauth.assertion is for oauth.grant jwt_bearer, and the grant is authorization_code"},
		{"secret without client", `{"grant": "jwt_bearer", "assertion": "a.b.c", "client_secret": "x"}`, "oauth.grant jwt_bearer with a client_secret or private_key needs oauth.client_id"},
		{"id_jag without id token", `{"grant": "id_jag", "client_id": "c", "idp_issuer": "https://idp.example", "idp_client_id": "i"}`, "oauth.grant id_jag needs oauth.id_token or oauth.id_token_file"},
		{"id_jag without client", `{"grant": "id_jag", "id_token": "a.b.c", "idp_issuer": "https://idp.example", "idp_client_id": "i"}`, "oauth.grant id_jag needs oauth.client_id"},
		{"id_jag without idp client", `{"grant": "id_jag", "client_id": "c", "id_token": "a.b.c", "idp_issuer": "https://idp.example"}`, "oauth.grant id_jag needs oauth.idp_client_id"},
		{"id_jag without idp", `{"grant": "id_jag", "client_id": "c", "id_token": "a.b.c", "idp_client_id": "i"}`, "oauth.grant id_jag needs oauth.idp_issuer or oauth.idp_token_endpoint"},
		{"idp not a url", `{"grant": "id_jag", "client_id": "c", "id_token": "a.b.c", "idp_client_id": "i", "idp_token_endpoint": "idp.example/token"}`, `oauth.idp_token_endpoint must be an http(s) URL without a fragment, got "idp.example/token"`},
		{"idp keys with another grant", `{"grant": "client_credentials", "client_id": "c", "client_secret": "s", "idp_issuer": "https://idp.example"}`, "oauth.idp_issuer is for oauth.grant id_jag, and the grant is client_credentials"},
		{"id_token_file with another grant", `{"grant": "jwt_bearer", "assertion": "a.b.c", "id_token_file": "/t"}`, "oauth.id_token_file is for oauth.grant id_jag, and the grant is jwt_bearer"},
		{"assertion not a string", `{"grant": "jwt_bearer", "assertion": 7}`, "oauth.assertion"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := `{"servers": {"s": {"url": "https://mcp.example/mcp", "oauth": ` + tt.oauth + `}}}`
			_, err := Parse("mcp.json", []byte(src), &LoadOptions{LookupEnv: envMap(nil), BaseDir: "/base"})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Parse(oauth %s) error = %v; want %q", tt.oauth, err, tt.want)
			}
			if strings.Contains(err.Error(), "a.b.c") {
				t.Errorf("the error shows a credential: %v", err)
			}
		})
	}
}
