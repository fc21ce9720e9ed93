package mcpauth

import (
	"net/url"
	"strings"
	"testing"
)

func TestSameIssuer(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"https://as.example", "https://as.example", true},
		{"https://as.example", "https://as.example/", true},
		{"https://as.example/tenant/", "https://as.example/tenant", true},
		{"https://as.example", "https://as.example:443", true},
		{"http://as.example:80/t", "http://as.example/t", true},
		{"https://AS.Example", "https://as.example", true},
		{"HTTPS://as.example", "https://as.example", true},
		{"https://as.example", "https://as.example:8443", false},
		{"https://as.example", "http://as.example", false},
		{"https://as.example/tenant", "https://as.example/Tenant", false},
		{"https://as.example/tenant", "https://as.example/tenant2", false},
		{"https://as.example", "https://evil.example", false},
		{"https://as.example?x=1", "https://as.example", false},
		{"https://as.example#f", "https://as.example", false},
		{"https://user@as.example", "https://as.example", false},
		{"", "", false},
		{"as.example", "as.example", false},
	}
	for _, tt := range tests {
		if got := sameIssuer(tt.a, tt.b); got != tt.want {
			t.Errorf("sameIssuer(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
		if got := sameIssuer(tt.b, tt.a); got != tt.want {
			t.Errorf("sameIssuer(%q, %q) = %v, want %v", tt.b, tt.a, got, tt.want)
		}
	}
}

// TestIssParameter runs sign-ins against an authorization server whose
// answers carry iss or not, as the 2026-07-28 table of "Authorization
// Response Validation" has it: a present iss must be the recorded issuer
// exactly (no normalisation: a trailing slash is another issuer), an
// absent one is refused when the metadata says it is sent. A refused
// answer's code never reaches the token endpoint.
func TestIssParameter(t *testing.T) {
	tests := []struct {
		name     string
		issParam bool
		iss      func(string) string
		refused  string // part of the error; "" means signed in
	}{
		{"advertised and sent", true, nil, ""},
		{"neither advertised nor sent", false, func(string) string { return "" }, ""},
		{"sent but not advertised", false, nil, ""},
		{"advertised and missing", true, func(string) string { return "" }, `comes from issuer "", not`},
		{"another issuer", true, func(string) string { return "https://evil.example" }, `comes from issuer "https://evil.example", not`},
		{"another issuer, not advertised", false, func(string) string { return "https://evil.example" }, `comes from issuer "https://evil.example", not`},
		{"trailing slash variant", true, func(s string) string { return s + "/" }, "compared exactly"},
		{"upper-case scheme variant", true, func(s string) string { return strings.Replace(s, "http://127.0.0.1", "HTTP://127.0.0.1", 1) }, "compared exactly"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			as := newTestAS(t, "as")
			as.issParam, as.iss = tt.issParam, tt.iss
			rs := newTestRS(t, as)
			_, c := newTestClient(t, rs, &MemoryTokenStore{}, nil)
			err := call(t, c, rs)
			_, tokenRequests, _, _, _ := as.counts()
			if tt.refused == "" {
				if err != nil || tokenRequests != 1 {
					t.Fatalf("call = %v after %d token requests; want signed in with one", err, tokenRequests)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.refused) || !strings.Contains(err.Error(), "mix-up") {
				t.Errorf("call = %v; want a refusal containing %q", err, tt.refused)
			}
			if tokenRequests != 0 {
				t.Errorf("the code of a refused answer went to the token endpoint (%d requests)", tokenRequests)
			}
		})
	}
}

// TestIssCheckedBeforeError checks that an error answer from another
// issuer is neither acted on nor shown (RFC 9207 §2.4): the sign-in fails
// for the issuer, and the error it carries appears nowhere.
func TestIssCheckedBeforeError(t *testing.T) {
	as := newTestAS(t, "as")
	as.issParam = true
	as.answer = func(v url.Values) {
		v.Del("code")
		v.Set("error", "access_denied_by_the_attacker")
		v.Set("iss", "https://evil.example")
	}
	rs := newTestRS(t, as)
	_, c := newTestClient(t, rs, &MemoryTokenStore{}, nil)
	err := call(t, c, rs)
	if err == nil || !strings.Contains(err.Error(), `comes from issuer "https://evil.example"`) || strings.Contains(err.Error(), "access_denied_by_the_attacker") {
		t.Errorf("call = %v; want the issuer refused and its error not shown", err)
	}
}

// TestIssuerNormalisedAcrossMetadata checks that the issuer a resource's
// metadata names and the one the authorization server's metadata gives
// are compared as the same server after normalisation (scheme case,
// trailing slash), that the answer's iss is then checked against the
// metadata's own spelling, and that a later 401 whose metadata spells the
// server another way is no migration: the token is refreshed at the same
// server, with no new registration.
func TestIssuerNormalisedAcrossMetadata(t *testing.T) {
	as := newTestAS(t, "as")
	as.issParam = true
	rs := newTestRS(t, as)
	rs.setAS(as, strings.Replace(as.URL, "http://", "HTTP://", 1)+"/")
	a, c := newTestClient(t, rs, &MemoryTokenStore{}, nil)
	if err := call(t, c, rs); err != nil {
		t.Fatalf("sign-in with the issuer spelled two ways: %v", err)
	}
	if tok := a.peek(); tok == nil || tok.Issuer != as.URL {
		t.Fatalf("the token's issuer = %v, want the metadata's %q", tok, as.URL)
	}

	rs.setAS(as, as.URL+"/")
	rs.mu.Lock()
	rs.refuseNext = 1
	rs.mu.Unlock()
	if err := call(t, c, rs); err != nil {
		t.Fatalf("call after a refused token: %v", err)
	}
	registrations, tokenRequests, _, _, _ := as.counts()
	if registrations != 1 || tokenRequests != 2 {
		t.Errorf("%d registrations and %d token requests; want 1 and 2 (a refresh at the same server)", registrations, tokenRequests)
	}
	if !strings.Contains(as.saw(), "grant_type=refresh_token") {
		t.Errorf("no refresh at the authorization server:\n%s", as.saw())
	}
}
