// gallery.js: "Add a server", the MCP Registry in the page. It searches
// as elysia mcp search does (GET /api/registry/servers?q=) and adds a
// server as elysia mcp add does (POST /api/registry/servers): the entry
// goes into mcp.json, and the running service picks it up like any edit
// of the file (the tree then shows its gateway). A value the server needs
// without a default is asked for in a form; a secret never is: it becomes
// an input the operator sets (or, when asked, each user's own secret).
// Both routes are for admin keys only on a keyed service.
//
// Selectors for tests: #add-server opens #gallery-dialog; #gallery-query
// and #gallery-search-button search; #gallery-status (role=status);
// #gallery-results holds one li.gallery-item[data-server=<registry
// name>][data-entry=<name in mcp.json>] per server, its button.add
// (disabled, "In mcp.json", when the file has the name); a server that
// needs values gets form.gallery-values with a control per value
// (name=<value name>) and button.gallery-submit; #gallery-per-user asks
// for per-user secrets; after an add the item has data-added="true" and a
// .gallery-added note; an error shows in the item's .gallery-error.
import { apiJSON } from "./api.js";
import { h } from "./render.js";
import { icon } from "./icons.js";

export class Gallery {
  constructor() {
    this.seq = 0; // ids of the value fields
  }

  install() {
    const refresh = document.getElementById("tree-refresh");
    if (!refresh || document.getElementById("add-server")) return;
    refresh.before(h("button", {
      type: "button", id: "add-server", class: "small-button", title: "Find a server in the MCP Registry and add it to mcp.json",
      onclick: () => this.open(),
    }, icon("plus"), " Add a server"));
    this.query = h("input", { id: "gallery-query", name: "q", type: "search", placeholder: "weather, github, database…", autocomplete: "off", spellcheck: "false" });
    this.status = h("p", { id: "gallery-status", class: "muted small", role: "status" });
    this.results = h("ul", { id: "gallery-results", class: "gallery-results", "aria-label": "Servers in the registry" });
    this.perUser = h("input", { id: "gallery-per-user", type: "checkbox" });
    this.source = h("p", { id: "gallery-source", class: "muted small" }, "From the MCP Registry. The server goes into mcp.json, which the running service picks up.");
    const search = h("form", { id: "gallery-search", class: "gallery-search", role: "search" },
      h("label", { for: "gallery-query", class: "visually-hidden" }, "Search the registry"),
      this.query,
      h("button", { type: "submit", id: "gallery-search-button", class: "primary-button" }, "Search"));
    search.addEventListener("submit", (ev) => {
      ev.preventDefault();
      this.search();
    });
    this.dialog = h("dialog", { id: "gallery-dialog", class: "dialog gallery-dialog", "aria-labelledby": "gallery-title" },
      h("div", { class: "gallery-head" },
        h("h2", { id: "gallery-title" }, "Add a server"),
        h("button", { type: "button", id: "gallery-close", class: "icon-button", "aria-label": "Close", onclick: () => this.dialog.close() }, icon("close"))),
      this.source,
      search,
      h("label", { class: "small gallery-option" }, this.perUser, " Each user gives their own secrets (instead of one set for the whole service)"),
      this.status,
      this.results);
    document.body.append(this.dialog);
  }

  open() {
    if (typeof this.dialog.showModal === "function") this.dialog.showModal();
    else this.dialog.setAttribute("open", "");
    this.query.focus();
    if (!this.searched) this.search();
  }

  async search() {
    this.searched = true;
    const q = this.query.value.trim();
    this.status.textContent = q ? `Searching for ${q}…` : "Listing the registry's servers…";
    this.results.setAttribute("aria-busy", "true");
    const r = await apiJSON(`/api/registry/servers?q=${encodeURIComponent(q)}`);
    this.results.removeAttribute("aria-busy");
    if (!r.ok || !r.data || !Array.isArray(r.data.servers)) {
      this.results.replaceChildren();
      this.status.textContent = r.status === 403
        ? "Adding servers needs an admin API key."
        : `The registry could not be searched: ${r.error || "request failed (" + r.status + ")"}`;
      this.searched = false;
      return;
    }
    if (r.data.registry) this.source.textContent = `From the MCP Registry at ${r.data.registry}. The server goes into mcp.json, which the running service picks up.`;
    const list = r.data.servers;
    this.status.textContent = list.length
      ? `${list.length} server${list.length === 1 ? "" : "s"}${q ? " matching " + q : ""}.`
      : `No server in the registry matches ${q}.`;
    this.results.replaceChildren(...list.map((s) => this.item(s)));
  }

  // item is one server of a search.
  item(s) {
    const title = s.title || s.name;
    const add = h("button", {
      type: "button", class: "small-button add", "aria-label": s.in_config ? `In mcp.json: ${title}` : `Add ${title}`,
      disabled: s.in_config, onclick: () => this.add(li, s, {}),
    }, s.in_config ? "In mcp.json" : [icon("plus"), " Add"]);
    const meta = [h("code", null, s.name), ` · ${s.version}`];
    if (Array.isArray(s.runs) && s.runs.length) meta.push(` · ${s.runs.join(", ")}`);
    const links = [];
    if (s.repository_url) links.push(h("a", { href: s.repository_url, target: "_blank", rel: "noopener noreferrer" }, "source"));
    if (s.website_url) links.push(h("a", { href: s.website_url, target: "_blank", rel: "noopener noreferrer" }, "website"));
    const li = h("li", { class: "gallery-item", dataset: { server: s.name, entry: s.entry || "" } },
      h("div", { class: "gallery-item-head" }, h("h3", null, title), add),
      h("div", { class: "muted small" }, meta, links.length ? " · " : "", links.flatMap((a, i) => (i ? [" · ", a] : [a]))),
      s.description ? h("p", { class: "gallery-desc" }, s.description) : null,
      s.status && s.status !== "active" ? h("div", { class: "note warning small" }, icon("warning"), ` ${s.status}${s.status_message ? ": " + s.status_message : ""}`) : null,
      h("div", { class: "gallery-error", role: "alert" }));
    return li;
  }

  // add asks the service to add server s with body's values; a server
  // that needs values gets a form for them, one whose name mcp.json has a
  // field for another name.
  async add(li, s, extra) {
    const err = li.querySelector(".gallery-error");
    err.replaceChildren();
    for (const b of li.querySelectorAll("button")) b.disabled = true;
    const body = { server: s.name, version: s.version, per_user_secrets: this.perUser.checked, ...extra };
    const r = await apiJSON("/api/registry/servers", { method: "POST", body });
    for (const b of li.querySelectorAll("button")) b.disabled = false;
    if (r.ok && r.data && r.data.added) {
      this.added(li, r.data.added);
      return;
    }
    const missing = r.data && Array.isArray(r.data.missing) ? r.data.missing : null;
    if (r.status === 422 && missing) {
      this.valuesForm(li, s, missing, extra);
      return;
    }
    if (r.status === 409) {
      this.valuesForm(li, s, [], extra, true);
    }
    err.replaceChildren(h("div", { class: "note error small" }, icon("error"), " ",
      r.status === 403 ? "Adding a server needs an admin API key." : r.error || `request failed (${r.status})`));
  }

  // valuesForm asks for the values the server needs (and, when asked, a
  // name for its entry), then adds it with them.
  valuesForm(li, s, missing, extra, askName) {
    li.querySelector("form.gallery-values")?.remove();
    const id = () => `gallery-value-${++this.seq}`;
    const fields = missing.map((v) => {
      const fid = id();
      const control = Array.isArray(v.choices) && v.choices.length
        ? h("select", { id: fid, name: v.name, required: true }, v.choices.map((c) => h("option", { value: c }, c)))
        : h("input", { id: fid, name: v.name, type: "text", required: true, placeholder: v.placeholder || undefined, autocomplete: "off", spellcheck: "false", "aria-describedby": v.description ? fid + "-hint" : undefined });
      return h("div", { class: "gallery-field" },
        h("label", { for: fid }, `${v.kind} `, h("code", null, v.name)),
        control,
        v.description ? h("span", { id: fid + "-hint", class: "muted small" }, v.description) : null);
    });
    if (askName) {
      const fid = id();
      fields.push(h("div", { class: "gallery-field" },
        h("label", { for: fid }, "Name in mcp.json"),
        h("input", { id: fid, name: "__entry_name", type: "text", required: true, value: (extra && extra.name) || `${s.entry}-2`, autocomplete: "off", spellcheck: "false" })));
    }
    const form = h("form", { class: "gallery-values", novalidate: true },
      h("p", { class: "small" }, askName ? "mcp.json already has a server of that name: choose another." : `${s.title || s.name} needs ${missing.length === 1 ? "a value" : "these values"} without a default.`),
      ...fields,
      h("div", { class: "dialog-actions" },
        h("button", { type: "button", class: "small-button", onclick: () => form.remove() }, "Cancel"),
        h("button", { type: "submit", class: "primary-button gallery-submit" }, "Add")));
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      const values = { ...((extra && extra.values) || {}) };
      let name = extra && extra.name;
      for (const el of form.querySelectorAll("input, select")) {
        if (!el.value.trim()) {
          el.setAttribute("aria-invalid", "true");
          el.focus();
          return;
        }
        el.removeAttribute("aria-invalid");
        if (el.name === "__entry_name") name = el.value.trim();
        else values[el.name] = el.value;
      }
      form.remove();
      this.add(li, s, { values, ...(name ? { name } : {}) });
    });
    li.querySelector(".gallery-error").before(form);
    form.querySelector("input, select")?.focus();
  }

  // added shows what was written and what the server still needs.
  added(li, a) {
    li.dataset.added = "true";
    li.querySelector("form.gallery-values")?.remove();
    const add = li.querySelector("button.add");
    add.disabled = true;
    add.replaceChildren(icon("check"), " Added");
    add.setAttribute("aria-label", `Added ${li.querySelector("h3").textContent}`);
    const runs = a.transport === "stdio" ? [a.command, ...(a.args || [])].join(" ") : a.url;
    const rows = [
      h("div", null, icon("check"), " Added ", h("code", null, a.name), ` to ${a.config_file} (${a.from}): `, h("code", null, runs || "")),
      h("div", null, `The service picks it up in a moment: the tree then shows ${a.name}.`),
    ];
    for (const input of a.inputs || []) {
      rows.push(h("div", null, "It needs ", h("code", null, input.env), input.description ? ` (${input.description})` : "",
        " in the service's environment: set it and restart the service."));
    }
    for (const name of a.user_secrets || []) rows.push(h("div", null, "Each user sets their secret ", h("code", null, name), "."));
    if (a.warning) rows.push(h("div", null, icon("warning"), " ", a.warning));
    li.querySelector(".gallery-error").before(h("div", { class: "note info small gallery-added", role: "status" }, rows));
  }
}
