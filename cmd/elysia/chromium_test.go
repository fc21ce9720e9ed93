package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/elysia-go/elysia/internal/testenv"
)

// chromiumPath returns the Chromium binary: $ELYSIA_CHROMIUM, else the first
// of chromium, chromium-browser, google-chrome on PATH. Without one the test
// is skipped, or fails under CI=true.
func chromiumPath(tb testing.TB) string {
	tb.Helper()
	testenv.Integration(tb)
	if p := os.Getenv("ELYSIA_CHROMIUM"); p != "" {
		if _, err := os.Stat(p); err != nil {
			tb.Fatalf("ELYSIA_CHROMIUM=%s: %v", p, err)
		}
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	testenv.Missing(tb, "Chromium is not installed (apt-get install -y chromium)")
	return ""
}

// browser is a headless Chromium driven by chromedp for one test.
type browser struct {
	// ctx runs actions; it carries the test's deadline.
	ctx context.Context
	t   testing.TB

	mu      sync.Mutex
	console []string // console messages, logged when the test fails
	thrown  []string // uncaught exceptions in the page
	errors  []string // exceptions, console.error calls and error log entries
}

// newBrowser starts a headless Chromium with a fresh profile; its actions
// must finish within timeout. The browser is closed (and its process waited
// for) when the test ends.
func newBrowser(tb testing.TB, timeout time.Duration) *browser {
	tb.Helper()
	return newBrowserWith(tb, timeout)
}

// newBrowserWith is newBrowser with extra command-line options for
// Chromium (such as host-resolver-rules).
func newBrowserWith(tb testing.TB, timeout time.Duration, extra ...chromedp.ExecAllocatorOption) *browser {
	tb.Helper()
	exe := chromiumPath(tb)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.UserDataDir(tb.TempDir()),
		chromedp.WindowSize(1440, 900),
		// DESIGN.md "Tests and CI": CI runs as root on a small machine.
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true),
		// No network beyond 127.0.0.1: keep Chromium from calling home.
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-domain-reliability", true),
	)
	opts = append(opts, extra...)
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	b := &browser{t: tb}
	var ended sync.Mutex // guards logging after the test returned
	done := false
	logf := func(format string, args ...any) {
		ended.Lock()
		defer ended.Unlock()
		if !done {
			tb.Logf("chromedp: "+format, args...)
		}
	}
	bctx, bcancel := chromedp.NewContext(actx, chromedp.WithErrorf(logf))
	// The first Do starts the browser and binds it to bctx, which must
	// therefore carry no deadline.
	start := time.Now()
	if err := chromedp.Do(bctx); err != nil {
		bcancel()
		acancel()
		tb.Fatalf("start Chromium (%s): %v", exe, err)
	}
	var pid int
	if c := chromedp.FromContext(bctx); c != nil && c.Browser != nil && c.Browser.Process() != nil {
		pid = c.Browser.Process().Pid
	}
	tb.Logf("Chromium started in %v (pid %d)", time.Since(start).Round(time.Millisecond), pid)

	go b.record(bctx)

	ctx, cancel := context.WithTimeout(bctx, timeout)
	b.ctx = ctx
	tb.Cleanup(func() {
		cancel()
		// Close the browser gracefully, then make sure its process is gone.
		cctx, ccancel := context.WithTimeout(bctx, 10*time.Second)
		if err := chromedp.Cancel(cctx); err != nil && !errors.Is(err, context.Canceled) {
			tb.Logf("closing Chromium: %v", err)
		}
		ccancel()
		bcancel()
		acancel()
		ended.Lock()
		done = true
		ended.Unlock()
		if pid > 0 {
			testenv.WaitFor(tb, 10*time.Second, "the Chromium process to exit", func() bool {
				return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
			})
		}
		if tb.Failed() {
			b.mu.Lock()
			if len(b.console) > 0 {
				tb.Logf("browser console:\n%s", strings.Join(b.console, "\n"))
			}
			b.mu.Unlock()
		}
	})
	return b
}

// record keeps the console messages of the tab ctx runs in until ctx ends.
func (b *browser) record(ctx context.Context) {
	for m, err := range chromedp.Console(ctx) {
		if err != nil {
			return
		}
		b.mu.Lock()
		b.console = append(b.console, m.String())
		if m.IsException() {
			b.thrown = append(b.thrown, m.String())
		}
		if m.IsException() || m.Type == chromedp.ConsoleError {
			b.errors = append(b.errors, m.String()+" ("+m.URL+")")
		}
		b.mu.Unlock()
	}
}

// newTab opens another tab of b's browser in a browser context of its own
// (its own storage, as another person's browser would have). It shares b's
// deadline; its console is kept apart. The tab closes when the test ends.
func (b *browser) newTab(tb testing.TB) *browser {
	tb.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext())
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		tb.Fatalf("open a tab: %v", err)
	}
	tab := &browser{ctx: ctx, t: tb}
	go tab.record(ctx)
	tb.Cleanup(func() {
		cancel()
		if tb.Failed() {
			tab.mu.Lock()
			if len(tab.console) > 0 {
				tb.Logf("second tab's console:\n%s", strings.Join(tab.console, "\n"))
			}
			tab.mu.Unlock()
		}
	})
	return tab
}

// stepTimeout bounds one step, so that a stuck step says which it is.
const stepTimeout = 20 * time.Second

// do runs the actions of one step and fails the test, with a screenshot
// and the page's body, when one fails.
func (b *browser) do(step string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.fail(step, err)
	}
}

// eval evaluates a JavaScript expression and decodes its value into T;
// chromedp.EvalAwaitPromise among opts makes it wait for a promise.
func eval[T any](b *browser, step, expr string, opts ...chromedp.EvaluateOption) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, opts...))
	if err != nil {
		b.fail(step, err)
	}
	return v
}

// fail reports a failed step with what the page looked like.
func (b *browser) fail(step string, err error) {
	b.t.Helper()
	// The test context may be what ended; look with a fresh short one.
	lctx, cancel := context.WithTimeout(context.WithoutCancel(b.ctx), 5*time.Second)
	defer cancel()
	var extra []string
	if c := chromedp.FromContext(lctx); c != nil {
		if shot, serr := chromedp.Run(lctx, chromedp.FullScreenshot(90)); serr == nil {
			if p, werr := writeScreenshot("fail-"+safeName(b.t.Name()+"-"+step)+".jpg", shot); werr == nil {
				extra = append(extra, "screenshot: "+p)
			}
		}
		if html, herr := chromedp.Run(lctx, chromedp.Evaluate[string](`document.body ? document.body.outerHTML : ""`)); herr == nil {
			if len(html) > 6000 {
				html = html[:6000] + "…"
			}
			extra = append(extra, "body: "+html)
		}
	}
	b.t.Fatalf("%s: %v\n%s", step, err, strings.Join(extra, "\n"))
}

// exceptions returns the uncaught exceptions the page threw so far.
func (b *browser) exceptions() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.thrown...)
}

// consoleErrors returns the console's errors so far: uncaught exceptions,
// console.error calls and the browser's own error entries (a failed
// request), less those containing one of allow (a test's expected 422).
func (b *browser) consoleErrors(allow ...string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, m := range b.errors {
		if !slices.ContainsFunc(allow, func(a string) bool { return strings.Contains(m, a) }) {
			out = append(out, m)
		}
	}
	return out
}

// noEmojiFonts is a Chromium option that hides every emoji font from it:
// FONTCONFIG_FILE names a config that takes the system's fonts but rejects
// any whose file name says emoji. It checks with fc-list that none is left.
func noEmojiFonts(tb testing.TB) chromedp.ExecAllocatorOption {
	tb.Helper()
	dir := tb.TempDir()
	conf := filepath.Join(dir, "fonts.conf")
	const body = `<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "urn:fontconfig:fonts.dtd">
<fontconfig>
  <include ignore_missing="yes">/etc/fonts/fonts.conf</include>
  <selectfont><rejectfont><glob>*Emoji*</glob><glob>*emoji*</glob></rejectfont></selectfont>
</fontconfig>
`
	if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
		tb.Fatal(err)
	}
	env := "FONTCONFIG_FILE=" + conf
	if fcList, err := exec.LookPath("fc-list"); err == nil {
		cmd := exec.Command(fcList, ":", "family", "file")
		cmd.Env = append(os.Environ(), env)
		out, err := cmd.Output()
		if err != nil {
			tb.Fatalf("fc-list with %s: %v", conf, err)
		}
		if strings.Contains(strings.ToLower(string(out)), "emoji") {
			tb.Fatalf("fc-list still lists an emoji font with %s:\n%s", conf, out)
		}
	}
	return chromedp.Env(env)
}

// hasEmojiFont reports whether fontconfig knows an emoji font (the Debian
// package fonts-noto-color-emoji, which make test installs).
func hasEmojiFont() bool {
	out, err := exec.Command("fc-list", ":", "family").Output()
	return err == nil && strings.Contains(strings.ToLower(string(out)), "emoji")
}

// waitJS waits until the JavaScript expression is truthy.
func waitJS(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(0))
}

// clickNode clicks the element sel selects with the DOM's click(), once it
// is visible. chromedp.Click clicks at the element's coordinates, which
// miss when the layout moves between measuring and clicking (a panel whose
// text grows as the live stream updates it); use clickNode for controls
// whose click handler is all the test wants.
func clickNode(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(
		chromedp.WaitVisible(css(sel)),
		chromedp.Evaluate[chromedp.Void](fmt.Sprintf("void document.querySelector(%s).click()", jsQuote(sel))),
	)
}

// screenshotDir is testdata/screenshots at the repository root (gitignored).
func screenshotDir() string {
	return filepath.Join(testenv.RepoRoot(), "testdata", "screenshots")
}

func writeScreenshot(name string, data []byte) (string, error) {
	dir := screenshotDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	p := filepath.Join(dir, name)
	return p, os.WriteFile(p, data, 0o644)
}

func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		}
		return '_'
	}, s)
}
