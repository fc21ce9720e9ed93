package web

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var testKeys = map[string]string{"key-alice": "alice", "key-bob": "bob", "key-admin": AdminUser}

func TestAuthMatrix(t *testing.T) {
	h := newHarness(t, &Options{Keys: testKeys})
	const alice, bob, admin, none, bad = "key-alice", "key-bob", "key-admin", "", "key-wrong"
	tests := []struct {
		method, path, body, key string
		want                    int
	}{
		{"GET", "/healthz", "", none, 200},
		{"GET", "/readyz", "", none, 200},
		{"GET", "/ui/app.js", "", none, 200},
		{"GET", "/tree/alice/c1", "", none, 401},
		{"GET", "/tree/alice/c1", "", bad, 401},
		{"GET", "/tree/alice/c1", "", alice, 200},
		{"GET", "/tree/alice/c1", "", bob, 403},
		{"GET", "/tree/alice/c1", "", admin, 200},
		{"POST", "/init/user/alice", "", bob, 403},
		{"POST", "/init/user/alice", "", alice, 200},
		{"POST", "/init/tree/alice/c1", "", bob, 403},
		{"GET", "/tools/available", "", none, 401},
		{"GET", "/tools/available", "", bob, 200},
		{"POST", "/tools/alice/add", `{"tool_name": "mcp_todo"}`, bob, 403},
		{"POST", "/tools/alice/add", `{"tool_name": "mcp_todo"}`, alice, 200},
		{"GET", "/conversations/alice", "", none, 401},
		{"GET", "/conversations/alice", "", bob, 403},
		{"GET", "/conversations/alice", "", admin, 200},
		{"GET", "/conversations/alice/c1", "", bob, 403},
		{"DELETE", "/conversations/alice/c1", "", bob, 403},
		{"DELETE", "/conversations/alice/c1", "", alice, 200},
		{"GET", "/api/servers", "", none, 401},
		{"GET", "/api/servers", "", bob, 200},
		{"POST", "/api/servers/todo/list", "", bob, 200},
		{"POST", "/api/servers/todo/execute", `{"tool_name": "create_todo"}`, bob, 200},
		{"GET", "/metrics", "", none, 401},
		{"GET", "/metrics", "", alice, 403},
		{"GET", "/metrics", "", admin, 200},
	}
	for _, tt := range tests {
		t.Run(tt.method+tt.path+"/"+tt.key, func(t *testing.T) {
			var headers []string
			if tt.key != "" {
				headers = []string{"Authorization", "Bearer " + tt.key}
			}
			rec := h.do(t, tt.method, tt.path, tt.body, headers...)
			if rec.Code != tt.want {
				t.Errorf("status = %d, want %d; body %s", rec.Code, tt.want, rec.Body)
			}
		})
	}
	checkGolden(t, "auth_missing_key", h.do(t, "GET", "/tree/alice/c1", ""))
	checkGolden(t, "auth_other_user", h.do(t, "GET", "/tree/alice/c1", "", "Authorization", "Bearer "+bob))
	checkGolden(t, "auth_metrics_not_admin", h.do(t, "GET", "/metrics", "", "Authorization", "Bearer "+alice))
	if strings.Contains(h.logs.String(), "key-") {
		t.Errorf("a key was logged:\n%s", h.logs)
	}
}

func TestUIShellLoadsWithoutKey(t *testing.T) {
	h := newHarness(t, &Options{Keys: testKeys})
	rec := h.do(t, "GET", "/tree/alice/c1", "", "Accept", "text/html,*/*;q=0.8")
	if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") {
		t.Errorf("page shell: %d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	if strings.Contains(rec.Body.String(), "Mcp todo") {
		t.Error("page shell carries the tree")
	}
}

func TestMetricsNeedAdminAndCountRequests(t *testing.T) {
	h := newHarness(t, &Options{Keys: testKeys})
	h.do(t, "GET", "/healthz", "")
	rec := h.do(t, "GET", "/metrics", "", "Authorization", "Bearer key-admin")
	if rec.Code != 200 {
		t.Fatalf("status %d", rec.Code)
	}
	want := `elysia_http_requests_total{method="GET",route="/healthz",status="200"} 1`
	if !strings.Contains(rec.Body.String(), want) {
		t.Errorf("metrics lack %q:\n%s", want, rec.Body)
	}
	if !strings.Contains(rec.Body.String(), "elysia_http_request_duration_seconds_bucket") {
		t.Error("metrics lack the latency histogram")
	}
	// A second server on the same registry reuses the collectors.
	newHarness(t, &Options{Registry: h.reg})
}

func TestParseKeys(t *testing.T) {
	got, err := ParseKeys(" k1:alice, k2:bob ,k3:*,,a:b:carol")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"k1": "alice", "k2": "bob", "k3": "*", "a:b": "carol"}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("key %q → %q, want %q", k, got[k], v)
		}
	}
	for in, wantErr := range map[string]string{
		"k1:alice,secretkey": "API keys entry 2: want key:user_id, found no ':'",
		"k1:alice,k1:bob":    "API keys entry 2: key given twice",
		":alice":             "API keys entry 1: empty key before ':'",
		"k1:":                "API keys entry 1: empty user id after ':' (use * for an admin key)",
		"k 1:alice":          "API keys entry 1: key contains white space",
	} {
		_, err := ParseKeys(in)
		if err == nil || err.Error() != wantErr {
			t.Errorf("ParseKeys(%q) error = %v, want %q", in, err, wantErr)
		}
		if err != nil && strings.Contains(err.Error(), "secretkey") {
			t.Errorf("error repeats the key: %v", err)
		}
	}
}

func TestLoadKeysFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "keys")
	if err := os.WriteFile(good, []byte("# team keys\nk1:alice\n\n  k2 : bob  \nk3:*\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := LoadKeysFile(good)
	if err != nil {
		t.Fatal(err)
	}
	if got["k1"] != "alice" || got["k2"] != "bob" || got["k3"] != "*" || len(got) != 3 {
		t.Errorf("got %v", got)
	}
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte("k1:alice\n# c\nnocolon\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = LoadKeysFile(bad)
	if want := bad + ":3: want key:user_id, found no ':'"; err == nil || err.Error() != want {
		t.Errorf("error = %v, want %q", err, want)
	}
	if _, err := LoadKeysFile(filepath.Join(dir, "missing")); err == nil {
		t.Error("missing file: no error")
	}
}

func TestCheckBind(t *testing.T) {
	tests := []struct {
		addr        string
		keys, allow bool
		wantErr     bool
	}{
		{"127.0.0.1:8000", false, false, false},
		{"127.8.0.1:8000", false, false, false},
		{"[::1]:8000", false, false, false},
		{"localhost:8000", false, false, false},
		{":8000", false, false, true},
		{"0.0.0.0:8000", false, false, true},
		{"[::]:8000", false, false, true},
		{"192.168.1.2:8000", false, false, true},
		{"example.com:8000", false, false, true},
		{"0.0.0.0:8000", true, false, false},
		{"0.0.0.0:8000", false, true, false},
		{"nonsense", false, false, true},
	}
	for _, tt := range tests {
		err := CheckBind(tt.addr, tt.keys, tt.allow)
		if (err != nil) != tt.wantErr {
			t.Errorf("CheckBind(%q, %v, %v) = %v", tt.addr, tt.keys, tt.allow, err)
		}
		if err != nil && tt.addr == "0.0.0.0:8000" && !strings.Contains(err.Error(), "--allow-unauthenticated") {
			t.Errorf("error does not say how to fix: %v", err)
		}
	}
}

func TestKeyringLookup(t *testing.T) {
	kr := newKeyring(testKeys)
	for key, want := range map[string]string{"key-alice": "alice", "key-admin": "*"} {
		if got, ok := kr.lookup(key); !ok || got != want {
			t.Errorf("lookup(%q) = %q, %v", key, got, ok)
		}
	}
	for _, key := range []string{"", "key-alic", "key-alicee"} {
		if _, ok := kr.lookup(key); ok {
			t.Errorf("lookup(%q) matched", key)
		}
	}
}
