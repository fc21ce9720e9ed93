// signin.js: signing in to MCP servers that ask for it, and the user's own
// secrets.
//
//   - A Connect button on every gateway node of the tree whose server is
//     needs_sign_in for this user, and on every plain line (plain.js) that
//     asks the user to sign in to a server, in the chat and the panel; its
//     title and the status line name whose sign-in it is ("Sign in to
//     notes as cli"). It opens a popup
//     at once (so no popup blocker stops it), asks POST /oauth/start/<server>
//     for the authorization URL with the API key in the header (never in a
//     URL), and sends the popup there. A POST, so that the service's Origin
//     check applies: a page of another site cannot start a sign-in. The
//     answer also sets the sign-in's cookie, whose secret the callback
//     wants back from this browser. The callback page tells this window
//     how it went (postMessage, same origin only) and closes; the server's
//     new state comes over the event stream like every other change.
//   - A secrets button beside the API key button opens a dialog that sets
//     (PUT /users/<user>/secrets/<name>) or deletes a secret. A secret is
//     never read back: the form is cleared once it is sent.
//
// Markup (tests rely on it): button.connect-button[data-server=<name>];
// #signin-status (role=status) says how the last sign-in went, with
// data-ok="true"|"false"; #secrets-button, #secrets-dialog, #secret-name,
// #secret-value, #secret-save, #secret-delete, #secret-status.
import { api, apiJSON } from "./api.js";
import { h } from "./render.js";
import { icon } from "./icons.js";

const SIGN_IN_RE = /sign in to (?:server )?"([^"]+)"/;

export class SignIn {
  constructor({ user, treeEl, chatEl }) {
    this.user = user;
    this.treeEl = treeEl;
    this.chatEl = chatEl;
    this.popup = null;
    this.pending = "";
    this.scheduled = false;
  }

  install() {
    this.panelEl = document.getElementById("tool-panel");
    const observer = new MutationObserver(() => this.schedule());
    for (const el of [this.treeEl, this.chatEl, this.panelEl]) {
      if (el) observer.observe(el, { childList: true, subtree: true, attributes: true, attributeFilter: ["data-state"] });
    }
    window.addEventListener("message", (ev) => this.onMessage(ev));
    this.installSecrets();
    this.schedule();
  }

  // schedule coalesces the observer's calls into one scan per frame; the
  // scan's own changes trigger one more, which finds nothing to do.
  schedule() {
    if (this.scheduled) return;
    this.scheduled = true;
    queueMicrotask(() => {
      this.scheduled = false;
      this.scan();
    });
  }

  scan() {
    if (this.treeEl) {
      for (const node of this.treeEl.querySelectorAll(".node[data-gateway]")) {
        const row = node.querySelector(":scope > .row");
        if (!row) continue;
        const badge = row.querySelector(".badge");
        const needs = badge && badge.dataset.state === "needs_sign_in";
        const btn = row.querySelector(":scope .connect-button");
        if (needs && !btn) badge.after(this.button(node.dataset.id));
        else if (!needs && btn) btn.remove();
      }
    }
    // A plain line that asks for a sign-in (plain.js) gets its button,
    // in the chat and in the panel.
    for (const root of [this.chatEl, this.panelEl]) {
      for (const line of root ? root.querySelectorAll("[data-signin-server]:not([data-signin-checked])") : []) {
        line.dataset.signinChecked = "true";
        line.append(" ", this.button(line.dataset.signinServer));
      }
    }
    if (this.chatEl) {
      for (const note of this.chatEl.querySelectorAll(".note.warning:not([data-signin-checked]):not(.plain)")) {
        note.dataset.signinChecked = "true";
        const m = SIGN_IN_RE.exec(note.textContent || "");
        if (m) note.append(" ", this.button(m[1]));
      }
    }
  }

  button(server) {
    return h("button", {
      type: "button", class: "small-button connect-button", dataset: { server },
      title: `Sign in to ${server} as ${this.user}`, "aria-label": `Connect: sign in to ${server} as ${this.user}`,
      onclick: (ev) => {
        ev.stopPropagation();
        ev.preventDefault();
        this.connect(server);
      },
    }, icon("plug"), "Connect");
  }

  async connect(server) {
    // Opened before any await, while the click still counts as the user's.
    const popup = window.open("about:blank", "elysia-signin", "popup,width=520,height=680");
    this.popup = popup;
    this.pending = server;
    this.status(`Signing in to ${server} as ${this.user}…`, null);
    const path = `/oauth/start/${encodeURIComponent(server)}?user=${encodeURIComponent(this.user)}`;
    const r = await apiJSON(path, { method: "POST" });
    if (!r.ok || !r.data || !r.data.url) {
      if (popup) popup.close();
      this.status(`Could not sign in to ${server}: ${r.error || "no authorization URL"}`, false);
      return;
    }
    // The URL comes from the server's authorization server: only a web
    // page may be opened, never a javascript: or data: URL in a window
    // of this origin.
    if (!/^https?:$/.test(urlProtocol(r.data.url))) {
      if (popup) popup.close();
      this.status(`Could not sign in to ${server}: the authorization URL is not an http(s) URL`, false);
      return;
    }
    if (popup && !popup.closed) popup.location.href = r.data.url;
    else this.status(`The browser blocked the sign-in window; allow popups for this page and press Connect again.`, false);
  }

  onMessage(ev) {
    if (ev.origin !== window.location.origin) return;
    const d = ev.data;
    if (!d || d.type !== "elysia-signin") return;
    const server = d.server || this.pending;
    if (d.ok) this.status(`Signed in to ${server} as ${this.user}. You can retry your question.`, true);
    else this.status(`Sign-in to ${server || "the server"} failed: ${d.message || "unknown error"}`, false);
    this.pending = "";
  }

  status(text, ok) {
    let el = document.getElementById("signin-status");
    if (!el) {
      el = h("div", { id: "signin-status", class: "note small", role: "status" });
      const servers = document.getElementById("servers-status");
      if (servers) servers.before(el);
      else document.body.append(el);
    }
    el.textContent = text;
    el.className = `note small ${ok === false ? "error" : ok ? "success" : ""}`.trim();
    el.dataset.ok = ok === null ? "" : String(ok);
    el.hidden = false;
  }

  // ---- secrets ----

  installSecrets() {
    const keyButton = document.getElementById("api-key-button");
    if (!keyButton || document.getElementById("secrets-button")) return;
    const button = h("button", {
      type: "button", id: "secrets-button", class: "icon-button", title: "Your secrets for MCP servers",
      "aria-label": "Set a secret for MCP servers", onclick: () => this.openSecrets(),
    }, icon("lock"));
    keyButton.before(button);
    const status = h("p", { id: "secret-status", class: "muted small", role: "status" });
    const name = h("input", { id: "secret-name", name: "secret-name", autocomplete: "off", spellcheck: "false", required: true, pattern: "[A-Za-z0-9_.\\-]{1,128}" });
    const value = h("input", { id: "secret-value", name: "secret-value", type: "password", autocomplete: "off", spellcheck: "false" });
    const form = h("form", { id: "secrets-form", method: "dialog" },
      h("h2", { id: "secrets-title" }, "Secrets"),
      h("p", { class: "muted" }, "Servers in mcp.json take these as ${user:NAME}. They are stored encrypted and never shown again."),
      h("label", { for: "secret-name" }, "Name"), name,
      h("label", { for: "secret-value" }, "Value"), value,
      status,
      h("div", { class: "dialog-actions" },
        h("button", { type: "button", id: "secret-delete", class: "small-button", onclick: () => this.saveSecret(null) }, icon("trash"), "Delete"),
        h("button", { type: "button", id: "secret-close", class: "small-button", onclick: () => this.dialog.close() }, "Close"),
        h("button", { type: "submit", id: "secret-save", class: "primary-button" }, "Save")));
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      this.saveSecret(value.value);
    });
    this.dialog = h("dialog", { id: "secrets-dialog", class: "dialog", "aria-labelledby": "secrets-title" }, form);
    document.body.append(this.dialog);
  }

  openSecrets() {
    document.getElementById("secret-status").textContent = "";
    if (typeof this.dialog.showModal === "function") this.dialog.showModal();
    else this.dialog.setAttribute("open", "");
    document.getElementById("secret-name").focus();
  }

  // saveSecret sets the secret to value, or deletes it when value is null.
  async saveSecret(value) {
    const nameEl = document.getElementById("secret-name");
    const valueEl = document.getElementById("secret-value");
    const status = document.getElementById("secret-status");
    const name = nameEl.value.trim();
    if (!name || !nameEl.checkValidity()) {
      status.textContent = "A name is 1 to 128 letters, digits, '_', '-' or '.'.";
      nameEl.focus();
      return;
    }
    if (value !== null && value === "") {
      status.textContent = "Enter a value.";
      valueEl.focus();
      return;
    }
    const path = `/users/${encodeURIComponent(this.user)}/secrets/${encodeURIComponent(name)}`;
    const res = value === null
      ? await api(path, { method: "DELETE" })
      : await api(path, { method: "PUT", body: { value } });
    valueEl.value = ""; // never kept in the page
    if (res.ok) {
      status.textContent = value === null ? `Deleted ${name}.` : `Saved ${name}.`;
      return;
    }
    let error = `${res.status}`;
    try {
      error = (await res.json()).error || error;
    } catch {
      // no JSON body
    }
    status.textContent = `Could not ${value === null ? "delete" : "save"} ${name}: ${error}`;
  }
}

// urlProtocol is the scheme of an absolute URL ("https:"), or "" when u is
// not one.
function urlProtocol(u) {
  try {
    return new URL(String(u)).protocol;
  } catch {
    return "";
  }
}
