package mcpregistry

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/elysia-go/elysia/internal/testenv"
)

func newClient(t *testing.T, url string, opts *Options) *Client {
	t.Helper()
	c, err := New(url, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestSearchPages(t *testing.T) {
	var servers []string
	for i := range 5 {
		servers = append(servers, fmt.Sprintf(`{"name": "io.github.x/weather-%d", "version": "1.0.%d", "description": "d"}`, i, i))
	}
	f := testenv.NewFakeRegistry(t, servers...)
	f.PageSize = 2
	c := newClient(t, f.URL+"/", nil)
	got, err := c.Search(t.Context(), "weather", 4)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || got[3].Server.Name != "io.github.x/weather-3" || !got[0].IsLatest || got[0].Status != "active" {
		t.Errorf("Search = %+v; want the first four, latest and active", got)
	}
	if want := "/v0.1/servers?limit=4&search=weather&version=latest"; f.Requests()[0] != want {
		t.Errorf("first request %s; want %s", f.Requests()[0], want)
	}
	rec, err := c.Get(t.Context(), "io.github.x/weather-2", "")
	if err != nil || rec.Server.Version != "1.0.2" {
		t.Errorf("Get = %+v, %v; want version 1.0.2", rec, err)
	}
	if reqs, want := f.Requests(), "/v0.1/servers/io.github.x%2Fweather-2/versions/latest"; reqs[len(reqs)-1] != want {
		t.Errorf("Get asked %s; want %s", reqs[len(reqs)-1], want)
	}
	if _, err := c.Get(t.Context(), "io.github.x/nope", "1.0.0"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get(nope) = %v; want ErrNotFound", err)
	}
	if _, err := c.Get(t.Context(), "bad name\n", ""); err == nil {
		t.Errorf("Get with a bad name asked the registry")
	}
}

// TestSearchCursorLoop: a registry that hands the same cursor back is not
// followed forever.
func TestSearchCursorLoop(t *testing.T) {
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n++
		_, _ = io.WriteString(w, `{"servers": [{"server": {"name": "a.b/c", "version": "1"}}], "metadata": {"nextCursor": "same"}}`)
	}))
	defer srv.Close()
	got, err := newClient(t, srv.URL, nil).Search(t.Context(), "", 50)
	if err != nil || len(got) != 2 || n != 2 {
		t.Errorf("Search = %d records, %v after %d requests; want 2 records after 2 requests", len(got), err, n)
	}
}

// TestBadRegistries: a registry that is down, slow, answers garbage, an
// error or far too much is an error that names the registry and what was
// wrong, quickly.
func TestBadRegistries(t *testing.T) {
	down := func() string {
		var lc net.ListenConfig
		l, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		_ = l.Close() // nothing listens there now
		return "http://" + addr
	}()
	handler := func(h http.HandlerFunc) string {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		return srv.URL
	}
	slow := handler(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	slowBody := handler(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"servers": [`)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	garbage := handler(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "<html><body>It works!</body></html>")
	})
	notAPI := handler(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, `{"items": []}`) })
	wrongTypes := handler(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"servers": [{"server": {"name": 5}}]}`)
	})
	failing := handler(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, `{"title": "Internal Server Error", "status": 500, "detail": "database down\u001b[2J"}`)
	})
	huge := handler(func(w http.ResponseWriter, r *http.Request) {
		// A 50 MB listing: the client stops reading after its cap.
		_, _ = io.WriteString(w, `{"servers": [`)
		item := `{"server": {"name": "io.github.x/y", "version": "1.0.0", "description": "` + strings.Repeat("x", 1000) + `"}},`
		for range 50 << 10 {
			if _, err := io.WriteString(w, item); err != nil {
				return
			}
		}
	})
	for _, tc := range []struct {
		name, url string
		want      error
		says      string
	}{
		{"down", down, ErrUnreachable, "connection refused"},
		{"slow", slow, ErrUnreachable, "did not answer within 300ms"},
		{"slow body", slowBody, ErrUnreachable, "did not answer within 300ms"},
		{"garbage", garbage, ErrBadAnswer, "something other than the MCP Registry API"},
		{"not the API", notAPI, ErrBadAnswer, `no "servers" list`},
		{"wrong types", wrongTypes, ErrBadAnswer, "something other than the MCP Registry API"},
		{"error status", failing, ErrBadAnswer, "500 Internal Server Error: database down[2J"},
		{"50 MB listing", huge, ErrBadAnswer, "more than 1048576 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Short for the silent registries; long enough for the others
			// on a loaded machine under -race.
			opts := &Options{Timeout: 10 * time.Second, MaxResponse: 1 << 20}
			if strings.HasPrefix(tc.name, "slow") {
				opts.Timeout = 300 * time.Millisecond
			}
			start := time.Now()
			_, err := newClient(t, tc.url, opts).Search(t.Context(), "x", 10)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), tc.url) {
				t.Errorf("Search = %v; want %v saying %q and naming %s", err, tc.want, tc.says, tc.url)
			}
			if strings.Contains(err.Error(), "\x1b") {
				t.Errorf("error carries an escape sequence: %q", err)
			}
			if d := time.Since(start); d > 8*time.Second {
				t.Errorf("Search took %v", d)
			}
		})
	}
}

// TestGetOtherServer: an answer about another server than the one asked
// for is refused.
func TestGetOtherServer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"server": {"name": "io.github.evil/other", "version": "1.0.0"}}`)
	}))
	defer srv.Close()
	if _, err := newClient(t, srv.URL, nil).Get(t.Context(), "io.github.x/y", "1.0.0"); !errors.Is(err, ErrBadAnswer) {
		t.Errorf("Get = %v; want ErrBadAnswer", err)
	}
}

func TestNewBadURL(t *testing.T) {
	for _, u := range []string{"", "ftp://h", "http://", "https://user:pw@h", "https://h/\n", "registry.example.com"} {
		if _, err := New(u, nil); err == nil {
			t.Errorf("New(%q) succeeded; want an error", u)
		}
	}
}
