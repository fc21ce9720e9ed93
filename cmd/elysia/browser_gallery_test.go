package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/elysia-go/elysia/internal/testenv"
)

// galleryConfig is an mcp.json with comments the gallery adds to.
const galleryConfig = `{
  // Servers of this service: the panel's "Add a server" writes below.
  "servers": {
    "todo": {"type": "stdio", "command": %q, "env": {"TODO_DB": "./data/todos.db"}, "cwd": "."} // local
  }
}
`

// openWithKey opens alice's page c1 of s with key stored as this
// browser's API key, and waits until it is live. The key is stored from
// /healthz, whose favicon.ico Chromium asks for (a 404 in the console).
func openWithKey(b *browser, s *serviceProc, key string) {
	b.do("open the page with the key "+key,
		chromedp.Navigate(s.URL+"/healthz"),
		chromedp.Evaluate[chromedp.Void](`localStorage.setItem("elysia.apiKey", `+jsString(key)+`)`),
		chromedp.Navigate(s.URL+"/tree/alice/c1"),
		waitJS(`document.body.dataset.live === "live" && document.body.dataset.state === "idle"`),
	)
}

// TestBrowserGallery drives the panel's "Add a server" against the
// official MCP Registry (seeded with a remote, server-everything from npm
// and a package that needs a value) on a keyed service: the search lists
// and narrows as elysia mcp search does; adding everything writes its
// entry into mcp.json with the comments kept, the tree shows its gateway
// and its tool answers through npx; the vault package asks for the value
// it needs in a form and names the secret it takes as an input; axe finds
// nothing serious; a user's (non-admin) key gets 403 and nothing is
// written.
func TestBrowserGallery(t *testing.T) {
	testenv.Everything(t) // npx finds server-everything in testdata/npm
	reg := testenv.MCPRegistry(t, testenv.RegistrySeed(t))
	src := axeSource(t)
	dir := t.TempDir()
	// npx -y resolves the package from the folder's node_modules: no download.
	if err := os.Symlink(filepath.Join(testenv.RepoRoot(), "testdata", "npm", "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	s := startService(t, serveOptions{Dir: dir, Config: fmt.Sprintf(galleryConfig, testenv.TodoMCP(t)),
		Env: []string{registryURLEnv + "=" + reg, "ELYSIA_API_KEYS=k-admin:*,k-alice:alice"}})
	b := newBrowserWith(t, 3*browserTimeout, noEmojiFonts(t))
	check := func(scene string) {
		t.Helper()
		for _, v := range axeViolations(b, src, scene) {
			t.Errorf("%s: %s", scene, v)
		}
	}
	openWithKey(b, s, "k-admin")
	b.do("the tree", chromedp.WaitVisible(css(`#tree .node[data-id="mcp_todo"]`)))

	// The gallery lists the registry's servers, and a search narrows them.
	item := func(name string) string { return `#gallery-results li.gallery-item[data-server="` + name + `"]` }
	b.do("open the gallery",
		clickNode(`#add-server`),
		chromedp.WaitVisible(css(`#gallery-dialog`)),
		chromedp.WaitVisible(css(item(testenv.SeedEverything))),
		chromedp.WaitVisible(css(item(testenv.SeedRemote))),
		chromedp.WaitVisible(css(item(testenv.SeedSecret))),
	)
	if src := eval[string](b, "registry named", `document.querySelector("#gallery-source").textContent`); !strings.Contains(src, reg) {
		t.Errorf("#gallery-source = %q; want the registry's URL %s", src, reg)
	}
	b.do("search for every reference",
		retype(`#gallery-query`, "every reference"),
		clickNode(`#gallery-search-button`),
		waitJS(`document.querySelectorAll("#gallery-results li.gallery-item").length === 1`),
		chromedp.WaitVisible(css(item(testenv.SeedEverything))),
	)
	text := eval[string](b, "everything's item", `document.querySelector(`+jsString(item(testenv.SeedEverything))+`).textContent`)
	for _, want := range []string{"Everything", testenv.EverythingVersion(t), "npm", "The MCP reference server"} {
		if !strings.Contains(text, want) {
			t.Errorf("everything's item %q lacks %q", text, want)
		}
	}
	check("the gallery's search")

	// Adding everything writes its entry; the service picks it up.
	b.do("list every server again",
		retype(`#gallery-query`, ""),
		clickNode(`#gallery-search-button`),
		waitJS(`document.querySelectorAll("#gallery-results li.gallery-item").length === 3`),
	)
	b.do("add everything",
		clickNode(item(testenv.SeedEverything)+` button.add`),
		chromedp.WaitVisible(css(item(testenv.SeedEverything)+`[data-added="true"] .gallery-added`)),
	)
	added := eval[string](b, "added note", `document.querySelector(`+jsString(item(testenv.SeedEverything)+` .gallery-added`)+`).textContent`)
	if !strings.Contains(added, "npx -y @modelcontextprotocol/server-everything@"+testenv.EverythingVersion(t)+" stdio") || !strings.Contains(added, "the tree then shows everything") {
		t.Errorf("the added note = %q; want the command and the gateway", added)
	}
	file, _ := os.ReadFile(s.Config)
	for _, want := range []string{"// Servers of this service", "// local", `"everything": {`, `"registry": {"name": "` + testenv.SeedEverything + `"`} {
		if !strings.Contains(string(file), want) {
			t.Errorf("mcp.json lacks %s:\n%s", want, file)
		}
	}
	b.do("the tree shows the new gateway", chromedp.WaitVisible(css(`#tree .node[data-id="mcp_everything"]`)))
	p := docScreenshot(t, b, "gallery.png")
	t.Logf("screenshot: %s", p)
	code, body := do(t, http.MethodPost, s.URL+"/api/servers/everything/execute", "k-admin",
		map[string]any{"tool_name": "echo", "tool_inputs": map[string]any{"message": "hello gallery"}})
	if code != http.StatusOK || !strings.Contains(fmt.Sprint(body["result"]), "hello gallery") {
		t.Errorf("echo of the added everything: %d %v", code, body)
	}

	// The vault package needs a value without a default: a form asks for it.
	b.do("search for the vault",
		retype(`#gallery-query`, "vault"),
		clickNode(`#gallery-search-button`),
		chromedp.WaitVisible(css(item(testenv.SeedSecret))),
		waitJS(`document.querySelectorAll("#gallery-results li.gallery-item").length === 1`),
		clickNode(item(testenv.SeedSecret)+` button.add`),
		chromedp.WaitVisible(css(item(testenv.SeedSecret)+` form.gallery-values [name="VAULT_NAMESPACE"]`)),
	)
	if n := eval[int](b, "fields asked", `document.querySelectorAll(`+jsString(item(testenv.SeedSecret)+` form.gallery-values input, `+item(testenv.SeedSecret)+` form.gallery-values select`)+`).length`); n != 1 {
		t.Errorf("the form asks %d values; want VAULT_NAMESPACE alone (VAULT_ADDR has a default, VAULT_TOKEN is a secret)", n)
	}
	if before, _ := os.ReadFile(s.Config); strings.Contains(string(before), "vault") {
		t.Errorf("mcp.json has the vault before its value was given:\n%s", before)
	}
	check("the gallery's form")
	t.Logf("screenshot: %s", screenshot(t, b, "gallery-values.png"))
	b.do("give the namespace",
		chromedp.SendKeys(css(item(testenv.SeedSecret)+` form.gallery-values [name="VAULT_NAMESPACE"]`), "team-a"),
		clickNode(item(testenv.SeedSecret)+` button.gallery-submit`),
		chromedp.WaitVisible(css(item(testenv.SeedSecret)+`[data-added="true"] .gallery-added`)),
	)
	if note := eval[string](b, "vault note", `document.querySelector(`+jsString(item(testenv.SeedSecret)+` .gallery-added`)+`).textContent`); !strings.Contains(note, "ELYSIA_INPUT_VAULT_VAULT_TOKEN") {
		t.Errorf("the vault's note = %q; want the secret's input named", note)
	}
	file, _ = os.ReadFile(s.Config)
	for _, want := range []string{`"VAULT_NAMESPACE": "team-a"`, `"VAULT_TOKEN": "${input:vault_vault_token}"`, "// local"} {
		if !strings.Contains(string(file), want) {
			t.Errorf("mcp.json lacks %s:\n%s", want, file)
		}
	}
	check("the gallery after adding")
	b.do("the tree shows the vault", chromedp.WaitVisible(css(`#tree .node[data-id="mcp_vault"]`)))

	// A user's key may not add servers: 403, nothing written.
	before, _ := os.ReadFile(s.Config)
	if code, body := do(t, http.MethodGet, s.URL+"/api/registry/servers?q=weather", "k-alice", nil); code != http.StatusForbidden {
		t.Errorf("search with a user's key: %d %v; want 403", code, body)
	}
	if code, body := do(t, http.MethodPost, s.URL+"/api/registry/servers", "k-alice", map[string]any{"server": testenv.SeedRemote}); code != http.StatusForbidden {
		t.Errorf("add with a user's key: %d %v; want 403", code, body)
	}
	b.do("the page with a user's key",
		chromedp.Evaluate[chromedp.Void](`localStorage.setItem("elysia.apiKey", "k-alice")`),
		chromedp.Reload(),
		chromedp.WaitVisible(css(`#tree .node[data-id="mcp_vault"]`)),
		clickNode(`#add-server`),
		waitJS(`/admin API key/.test(document.querySelector("#gallery-status").textContent)`),
	)
	if n := eval[int](b, "results for a user", `document.querySelectorAll("#gallery-results li").length`); n != 0 {
		t.Errorf("a user's gallery lists %d servers; want none", n)
	}
	if after, _ := os.ReadFile(s.Config); string(after) != string(before) {
		t.Errorf("mcp.json changed by a user's requests:\n%s", after)
	}
	if errs := b.consoleErrors("status of 403", "status of 422", "favicon.ico"); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}
