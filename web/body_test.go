package web

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestStalledBodyTimesOut: a request that announces a body and sends only
// part of it is answered 408 once BodyReadTimeout has passed, and its
// connection is closed, instead of being held open; a whole body on the
// same kind of connection is served as before.
func TestStalledBodyTimesOut(t *testing.T) {
	h := newHarness(t, &Options{BodyReadTimeout: 200 * time.Millisecond})
	ts := httptest.NewServer(h.srv.Handler())
	defer ts.Close()
	for _, path := range []string{"/init/tree/alice/c1", "/mcp"} {
		conn, err := net.DialTimeout("tcp", ts.Listener.Addr().String(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second)) // the test's own bound
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"low_mem", path)
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("POST %s with a stalled body: no answer within 10 s: %v", path, err)
		}
		res.Body.Close()
		if path == "/init/tree/alice/c1" && res.StatusCode != http.StatusRequestTimeout {
			t.Errorf("POST %s with a stalled body: status %d, want 408", path, res.StatusCode)
		}
	}
	res, err := http.Post(ts.URL+"/init/tree/alice/c2", "application/json", strings.NewReader(`{"low_memory": false}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Errorf("POST with a whole body: status %d, want 200", res.StatusCode)
	}
}
