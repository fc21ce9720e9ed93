package ui

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// importRE finds the relative module imports of a .js file.
var importRE = regexp.MustCompile(`(?m)^\s*import\s[^;]*?from\s+"(\./[^"]+)"`)

func TestAssetsExist(t *testing.T) {
	fsys := FS()
	for _, name := range []string{IndexName, "app.js", "style.css"} {
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			t.Fatalf("read %s: %v", name, err)
		}
		if len(b) == 0 {
			t.Errorf("%s is empty", name)
		}
	}
	// Every module an asset imports is embedded too.
	for _, name := range jsFiles(t) {
		b, _ := fs.ReadFile(fsys, name)
		for _, m := range importRE.FindAllStringSubmatch(string(b), -1) {
			dep := strings.TrimPrefix(m[1], "./")
			if _, err := fs.Stat(fsys, dep); err != nil {
				t.Errorf("%s imports %s, which is not embedded", name, m[1])
			}
		}
	}
	if got := string(Index()); !strings.HasPrefix(got, "<!doctype html>") {
		t.Errorf("Index() does not start with a doctype: %.40q", got)
	}
}

func TestIndexReferencesAssets(t *testing.T) {
	page := string(Index())
	for _, want := range []string{
		`<script type="module" src="/ui/app.js"></script>`,
		`<link rel="stylesheet" href="/ui/style.css">`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("index.html lacks %s", want)
		}
	}
	// The ids the browser tests rely on are in the shell (the rest are made
	// by the scripts and documented at the top of app.js).
	for _, id := range []string{
		"tree", "servers-status", "tool-panel", "list-tools", "tool-list", "tool-form",
		"tool-result", "query-input", "query-send", "chat", "conversations",
		"new-conversation", "api-key", "api-key-save", "query-stop",
		"tab-tools", "tab-resources", "tab-prompts", "tab-logs",
		"resource-list", "resource-content", "prompt-list", "prompt-form", "prompt-result",
		"server-logs", "logs-refresh",
	} {
		if !strings.Contains(page, `id="`+id+`"`) {
			t.Errorf("index.html lacks id %q", id)
		}
	}
	if !strings.Contains(page, `aria-live="polite"`) {
		t.Error("index.html has no aria-live region")
	}
}

// TestNoExternalURLs keeps the UI self-contained: the machine it runs on may
// have no internet, so nothing may come from a CDN or a font service.
func TestNoExternalURLs(t *testing.T) {
	fsys := FS()
	err := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		low := strings.ToLower(string(b))
		for _, bad := range []string{"http://", "https://", "//cdn", "@import url("} {
			if i := strings.Index(low, bad); i >= 0 {
				t.Errorf("%s contains %q at byte %d", name, bad, i)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestNoEmoji keeps symbols out of the UI's text: a machine without an
// emoji or symbol font draws them as empty boxes, so icons are inline SVG
// (icons.js). Typographic characters (… → · —) are fine: every text font
// has them.
func TestNoEmoji(t *testing.T) {
	symbol := func(r rune) bool {
		switch {
		case r >= 0x25A0 && r <= 0x25FF, // geometric shapes: ◆ ▸ ▾
			r >= 0x2600 && r <= 0x27BF,   // symbols and dingbats: ☰ ⚠ ✕ ✖
			r >= 0x27F0 && r <= 0x27FF,   // arrows: ⟳
			r >= 0x2B00 && r <= 0x2BFF,   // more symbols and arrows
			r >= 0x1F000 && r <= 0x1FAFF, // emoji: 📁 🔧 🔌 🔑 🗑 💬
			r == 0xFE0F:                  // emoji presentation selector
			return true
		}
		return false
	}
	fsys := FS()
	err := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, r := range line {
				if symbol(r) {
					t.Errorf("%s:%d: symbol %q (U+%04X) needs a font; use an icon from icons.js", name, i+1, r, r)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestJSParses runs node --check on every module. Node treats .js outside a
// "type": "module" package as CommonJS, so the files are copied as .mjs.
func TestJSParses(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("node is not on PATH")
		}
		t.Skip("node is not on PATH")
	}
	dir := t.TempDir()
	for _, name := range jsFiles(t) {
		b, err := fs.ReadFile(FS(), name)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, strings.TrimSuffix(name, ".js")+".mjs")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.CommandContext(t.Context(), node, "--check", path).CombinedOutput()
		if err != nil {
			t.Errorf("node --check %s: %v\n%s", name, err, out)
		}
	}
}

// runModuleCheck runs script (an ES module that exits non-zero on a
// failure, saying why) under node beside every module of the UI, and
// fails t with its output when it fails; what names it. Without node it
// skips t (fails it under CI=true).
func runModuleCheck(t *testing.T, what, script string) {
	t.Helper()
	node, dir := nodeModules(t)
	path := filepath.Join(dir, "check.mjs")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.CommandContext(t.Context(), node, path).CombinedOutput(); err != nil {
		t.Errorf("%s: %v\n%s", what, err, out)
	}
}

// nodeModules returns node and a folder holding every module of the UI,
// which node reads as ES modules; it skips tb without node (fails it under
// CI=true).
func nodeModules(tb testing.TB) (node, dir string) {
	tb.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatal("node is not on PATH")
		}
		tb.Skip("node is not on PATH")
	}
	// The modules import each other as .js: a package.json makes node read
	// them as ES modules.
	dir = tb.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"type": "module"}`), 0o644); err != nil {
		tb.Fatal(err)
	}
	for _, name := range jsFiles(tb) {
		b, err := fs.ReadFile(FS(), name)
		if err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return node, dir
}

// TestMarkdownEscapes runs the answer renderer under node: HTML in a model's
// answer must come out as text, and only safe links may survive.
func TestMarkdownEscapes(t *testing.T) {
	runModuleCheck(t, "markdown check", `
import { markdownTree, safeHref } from "./markdown.js";
// html serialises a tree the way the DOM builder builds it, text escaped.
const esc = (s) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
const html = (ns) => ns.map((n) => typeof n === "string" ? esc(n)
  : "<" + n.tag + (n.href !== undefined ? ' href="' + esc(n.href) + '"' : "") + ">" + (n.tag === "br" ? "" : html(n.children) + "</" + n.tag + ">")).join("");
const cases = [
  ["<img src=x onerror=alert(1)>", "&lt;img src=x onerror=alert(1)&gt;"],
  ["**bold** and `+"`<b>`"+`", "<strong>bold</strong> and <code>&lt;b&gt;</code>"],
  ["[x](javascript:alert)", "<p>x</p>"],
  ["- a\n- b", "<ul><li>a</li><li>b</li></ul>"],
  ["`+"```"+`\n<script>\n`+"```"+`", "<pre><code>&lt;script&gt;</code></pre>"],
  ["[a](https://x.test/?q=1&r=2) and https://y.test/p", '<a href="https://x.test/?q=1&amp;r=2">a</a> and <a href="https://y.test/p">https://y.test/p</a>'],
  // The issue's shape: a bare URL inside a link's text or URL stays text
  // or part of the one href; no quote ever ends an attribute.
  ['[https://a.test/" onmouseover="alert(1)](https://b.test/)', '<a href="https://b.test/">https://a.test/&quot; onmouseover=&quot;alert(1)</a>'],
];
let failed = 0;
for (const [src, want] of cases) {
  const got = html(markdownTree(src));
  if (!got.includes(want)) { console.log("markdown(" + JSON.stringify(src) + ") = " + got + ", want it to contain " + want); failed++; }
}
for (const bad of ["javascript:alert(1)", "JaVaScRiPt:alert(1)", " javascript:x", "java\tscript:x", "&#106;avascript:x", "data:text/html,x", "vbscript:x", "//evil.test/", "/\\evil.test", "x"]) {
  if (safeHref(bad) !== "") { console.log("safeHref(" + JSON.stringify(bad) + ") = " + JSON.stringify(safeHref(bad)) + ", want it refused"); failed++; }
}
for (const good of ["https://a.test/", "HTTP://a.test", "mailto:a@b.test", "/ui/x", "#top", "?q=1"]) {
  if (safeHref(good) !== good) { console.log("safeHref(" + JSON.stringify(good) + ") refused"); failed++; }
}
process.exit(failed ? 1 : 0);
`)
}

func TestHandler(t *testing.T) {
	srv := httptest.NewServer(Handler())
	defer srv.Close()
	tests := []struct {
		path       string
		wantStatus int
		wantType   string
	}{
		{"/ui/app.js", http.StatusOK, "javascript"},
		{"/ui/style.css", http.StatusOK, "text/css"},
		{"/ui/index.html", http.StatusNotFound, ""},
		{"/ui/", http.StatusNotFound, ""},
		{"/ui/missing.js", http.StatusNotFound, ""},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+tt.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = res.Body.Close() // only the status and headers are checked
			if res.StatusCode != tt.wantStatus {
				t.Fatalf("status = %d, want %d", res.StatusCode, tt.wantStatus)
			}
			if got := res.Header.Get("Content-Type"); !strings.Contains(got, tt.wantType) {
				t.Errorf("Content-Type = %q, want it to contain %q", got, tt.wantType)
			}
		})
	}
}

func jsFiles(tb testing.TB) []string {
	tb.Helper()
	names, err := fs.Glob(FS(), "*.js")
	if err != nil {
		tb.Fatal(err)
	}
	if len(names) == 0 {
		tb.Fatal("no .js files embedded")
	}
	return names
}

// TestDarkPalettesMatch: style.css writes the dark palette twice, for the
// device's dark setting and for the theme switch's Dark; the two must not
// drift apart.
func TestDarkPalettesMatch(t *testing.T) {
	b, err := fs.ReadFile(FS(), "style.css")
	if err != nil {
		t.Fatal(err)
	}
	css := string(b)
	block := func(head string) []string {
		t.Helper()
		i := strings.Index(css, head)
		if i < 0 {
			t.Fatalf("style.css has no %q", head)
		}
		body, _, _ := strings.Cut(css[i+len(head):], "}")
		var decls []string
		for _, d := range strings.Split(body, ";") {
			if d = strings.TrimSpace(d); strings.HasPrefix(d, "--") {
				decls = append(decls, d)
			}
		}
		return decls
	}
	system := block(`:root:not([data-theme="light"]) {`)
	chosen := block(`:root[data-theme="dark"] {`)
	if len(system) < 10 || strings.Join(system, ";") != strings.Join(chosen, ";") {
		t.Errorf("the dark palettes differ:\nsystem: %q\nchosen: %q", system, chosen)
	}
}
