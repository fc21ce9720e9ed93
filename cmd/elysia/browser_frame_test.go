package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// framePage is a foreign site's page that frames the service's UI, as a
// clickjacking page would under its decoy buttons.
const framePage = `<!doctype html><title>decoy</title>
<button id="decoy">Win a prize</button>
<iframe id="victim" src="%s/tree/alice/c1" width="800" height="600"></iframe>
<script>
document.getElementById("victim").addEventListener("load", () => { window.__loaded = true; });
</script>`

// TestBrowserUIRefusesFraming: every page of the service says it may not
// be framed (CSP frame-ancestors 'none' and X-Frame-Options DENY), and in
// Chromium a foreign page that frames the UI gets no app: the frame's
// document is refused, so it never even asks for the UI's script.
func TestBrowserUIRefusesFraming(t *testing.T) {
	s := startService(t, serveOptions{})
	for _, path := range []string{"/tree/alice/c1", "/ui/app.js", "/healthz", "/no-such-route"} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, s.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept", "text/html")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close() // only the headers matter
		if got := resp.Header.Get("X-Frame-Options"); got != "DENY" {
			t.Errorf("GET %s: X-Frame-Options = %q, want DENY", path, got)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("GET %s: Content-Security-Policy = %q, want frame-ancestors 'none'", path, csp)
		}
	}

	// The frame goes through a proxy that records what it asks for.
	proxy := newCountingProxy(t, s.URL)
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = fmt.Fprintf(w, framePage, proxy.URL) // the browser's problem if it goes away
	}))
	t.Cleanup(evil.Close)
	b := newBrowser(t, browserTimeout)
	// The frame's load event fires after its document and its scripts
	// loaded, or at once when the document was refused.
	b.do("the foreign page frames the UI", chromedp.Navigate(evil.URL), waitJS(`window.__loaded === true`))
	reqs := proxy.since(0)
	if !slices.Contains(reqs, "GET /tree/alice/c1") {
		t.Fatalf("the frame never asked for the page (requests %q): the test checks nothing", reqs)
	}
	if slices.Contains(reqs, "GET /ui/app.js") {
		t.Errorf("the framed UI loaded its script: requests %q", reqs)
	}
	// The service's own page, not framed, still works.
	b.do("open the UI itself", chromedp.Navigate(s.URL+"/tree/alice/c1"), waitJS(`document.body.dataset.state === "idle"`))
}
