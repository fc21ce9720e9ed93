// toolpanel.js: the gateway panel, one tab per thing an MCP server offers.
// Tools: "List tools" calls the gateway's list action, "Run" turns a tool's
// input schema into a form, and the form calls the execute action and
// renders what comes back. Resources: the server's resources (and resource
// templates); a click reads one. Prompts: the server's prompts; a click
// opens a form for its arguments and gets the prompt's messages. Logs: the
// server's last log messages. A tab loads when the user opens it (or
// presses its refresh), never on a timer.
//
// Selectors for tests: #tab-tools, #tab-resources, #tab-prompts, #tab-logs
// (aria-selected); #resource-list li[data-uri] button.open (templates are
// li[data-template] with a form: an input named after each variable, the
// URI it builds in .template-uri, and button.open), the content in
// #resource-content[data-state]; #prompt-list li[data-prompt] button.open,
// #prompt-form with a control named after each argument and
// #prompt-form-submit, the messages in #prompt-result[data-state] as
// .prompt-message[data-role]; #server-logs li[data-level] (hidden below #logs-level), #logs-refresh,
// #logs-live (reload every 2 s while the tab is open).
import { apiJSON } from "./api.js";
import { h, contentItem, inputSchemaOf, toolCard, toolResult } from "./render.js";
import { icon } from "./icons.js";
import { buildForm, collect, showFormError } from "./schemaform.js";
import { expandTemplate, templateVars } from "./uritemplate.js";
import { RunView, streamExecute } from "./panelrun.js";
import { Completer, argumentsOf } from "./complete.js";
import { promptText } from "./promptchat.js";

const TABS = ["tools", "resources", "prompts", "logs"];

// LEVELS are MCP's log levels, least severe first (RFC 5424's order).
const LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];

// LOGS_EVERY is how often an open Logs tab with "Live" checked reloads
// the log, in ms. Nothing polls while the tab is closed or the page hidden.
const LOGS_EVERY = 2000;

// toolsOf reads the tool list from a list response, whichever shape the
// service chose: {tools}, {result: {objects}}, {objects}, {result: [...]}.
export function toolsOf(data) {
  if (!data || typeof data !== "object") return [];
  const cands = [data.tools, data.result && data.result.objects, data.objects, data.result && data.result.tools, data.result];
  for (const c of cands) if (Array.isArray(c)) return c.filter((t) => t && typeof t === "object" && t.name);
  return [];
}

// plural is "1 call", "2 calls".
function plural(n, word) {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

// dock moves els (a form, its result) into li, the item the user clicked,
// so that they open where the click was; without li, back to the end of
// home (the tab's panel).
function dock(li, home, ...els) {
  const to = li || home;
  for (const el of els) if (el.parentElement !== to) to.append(el);
}

// reveal scrolls el into view when it arrives, at the least distance.
function reveal(el) {
  el.scrollIntoView({ block: "nearest" });
}

export class ToolPanel {
  // onUsePrompt(text) puts a prompt's text into the chat's input box.
  constructor({ treeView, onServersChanged, onUsePrompt }) {
    this.treeView = treeView;
    this.onServersChanged = onServersChanged || (() => {});
    this.onUsePrompt = onUsePrompt || (() => {});
    this.panel = document.getElementById("tool-panel");
    this.title = document.getElementById("tool-panel-title");
    this.info = document.getElementById("tool-panel-info");
    this.listButton = document.getElementById("list-tools");
    this.filter = document.getElementById("tool-filter");
    this.listStatus = document.getElementById("tool-list-status");
    this.list = document.getElementById("tool-list");
    this.form = document.getElementById("tool-form");
    this.result = document.getElementById("tool-result");
    this.gateway = "";
    this.tools = [];
    this.cache = new Map(); // gateway id → tools
    this.running = null;
    this.tab = "tools";
    this.fieldSeq = 0; // ids of template fields
    this.loaded = new Set(); // tabs loaded for this gateway
    this.resourceStatus = document.getElementById("resource-status");
    this.resourceList = document.getElementById("resource-list");
    this.resourceContent = document.getElementById("resource-content");
    this.promptStatus = document.getElementById("prompt-status");
    this.promptList = document.getElementById("prompt-list");
    this.promptForm = document.getElementById("prompt-form");
    this.promptResult = document.getElementById("prompt-result");
    this.logList = document.getElementById("server-logs");
    this.logStatus = document.getElementById("logs-status");

    const tabs = [...this.panel.querySelectorAll('[role="tab"]')];
    for (const b of tabs) b.addEventListener("click", () => this.selectTab(b.dataset.tab));
    // Arrow keys move between tabs, as in any tab list.
    this.panel.querySelector('[role="tablist"]').addEventListener("keydown", (ev) => {
      const step = { ArrowRight: 1, ArrowLeft: -1 }[ev.key];
      if (!step) return;
      ev.preventDefault();
      const next = TABS[(TABS.indexOf(this.tab) + step + TABS.length) % TABS.length];
      this.selectTab(next);
      document.getElementById("tab-" + next).focus();
    });
    document.getElementById("logs-refresh").addEventListener("click", () => this.loadLogs());
    this.logLevel = document.getElementById("logs-level");
    this.logLive = document.getElementById("logs-live");
    this.logLevel.addEventListener("change", () => this.filterLogs());
    this.logLive.addEventListener("change", () => this.followLogs());
    document.addEventListener("visibilitychange", () => this.followLogs());
    this.logTimer = 0;
    this.promptForm.addEventListener("submit", (ev) => {
      ev.preventDefault();
      this.getPrompt();
    });

    document.getElementById("tool-panel-close").addEventListener("click", () => this.close());
    this.listButton.addEventListener("click", () => this.listTools());
    this.filter.addEventListener("input", () => this.renderTools());
    this.form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      this.execute();
    });
    this.panel.addEventListener("keydown", (ev) => {
      if (ev.key === "Escape" && !ev.defaultPrevented) {
        ev.preventDefault(); // this Esc closes the panel, nothing more
        this.close();
      }
    });
  }

  // serverName is what goes into /api/servers/<name>/...: the server name
  // when /api/servers told us, else the tool name (the API takes both).
  serverName() {
    const s = this.treeView.server(this.gateway);
    return (s && s.name) || this.gateway;
  }

  open(gatewayID) {
    const same = this.gateway === gatewayID;
    this.gateway = gatewayID;
    this.panel.hidden = false;
    document.getElementById("layout").classList.add("with-panel");
    this.title.textContent = gatewayID;
    this.refreshInfo();
    if (!same) {
      this.tools = this.cache.get(gatewayID) || [];
      this.filter.value = "";
      this.listStatus.textContent = this.tools.length ? "" : "Press “List tools” to ask the server what it offers.";
      this.renderTools();
      this.cancelRun();
      this.closeForm();
      this.shownError = "";
      this.result.replaceChildren();
      delete this.result.dataset.state;
      this.resetFeatures();
    }
    if (this.tab === "tools") this.listButton.focus();
    else this.selectTab(this.tab);
  }

  // selectTab shows one tab and loads it the first time for this gateway.
  selectTab(name) {
    if (!TABS.includes(name)) return;
    this.tab = name;
    for (const t of TABS) {
      const tab = document.getElementById("tab-" + t);
      tab.setAttribute("aria-selected", String(t === name));
      tab.tabIndex = t === name ? 0 : -1;
      document.getElementById("tab-panel-" + t).hidden = t !== name;
    }
    this.followLogs();
    if (!this.gateway || this.loaded.has(name)) return;
    if (name === "resources") this.listResources();
    else if (name === "prompts") this.listPrompts();
    else if (name === "logs") this.loadLogs();
  }

  // resetFeatures forgets the resources, prompts and logs of the last gateway.
  resetFeatures() {
    this.loaded.clear();
    this.undock();
    this.resourceList.replaceChildren();
    this.resourceStatus.textContent = "";
    this.resourceContent.replaceChildren();
    delete this.resourceContent.dataset.state;
    this.promptList.replaceChildren();
    this.promptStatus.textContent = "";
    this.closePromptForm();
    this.logList.replaceChildren();
    this.logKey = "";
    this.logStatus.textContent = "";
  }

  // undock takes the resources' and prompts' forms and results out of the
  // lists, before the lists are replaced.
  undock() {
    dock(null, document.getElementById("tab-panel-resources"), this.resourceContent);
    dock(null, document.getElementById("tab-panel-prompts"), this.promptForm, this.promptResult);
  }

  featurePath(what) {
    return `/api/servers/${encodeURIComponent(this.serverName())}/${what}`;
  }

  // ---- resources ----

  async listResources() {
    const gw = this.gateway;
    this.loaded.add("resources");
    this.resourceStatus.textContent = "Listing resources…";
    const r = await apiJSON(this.featurePath("resources"), { method: "POST", body: {} });
    if (gw !== this.gateway) return;
    const list = r.data && Array.isArray(r.data.resources) ? r.data.resources : null;
    if (!list) {
      this.loaded.delete("resources");
      this.resourceStatus.replaceChildren(h("span", { class: "note error" }, r.error || "listing failed"));
      return;
    }
    this.resourceStatus.textContent = list.length ? `${list.length} resource${list.length === 1 ? "" : "s"}` : "This server offers no resources.";
    this.undock();
    this.resourceList.replaceChildren(...list.map((res) => this.resourceItem(res)));
  }

  resourceItem(res) {
    const head = (action) => h("div", { class: "tool-head" },
      h("span", { class: "feature-name" }, icon("file"), " ", res.name || res.uri || res.uri_template), action);
    const meta = [res.mime_type, res.description].filter(Boolean).join(" · ");
    if (!res.uri && res.uri_template) {
      return h("li", { class: "tool-item", dataset: { template: res.uri_template } },
        head(null), meta ? h("div", { class: "desc" }, meta) : null, this.templateForm(res));
    }
    return h("li", { class: "tool-item", dataset: { uri: res.uri } },
      head(h("button", { type: "button", class: "small-button open", "aria-label": `Read ${res.name || res.uri}`, onclick: () => this.readResource(res.uri) }, "Read")),
      h("code", { class: "uri" }, res.uri), meta ? h("div", { class: "desc" }, meta) : null);
  }

  // templateForm is a form with one field per variable of a resource
  // template (RFC 6570); it shows the URI it builds and reads it.
  templateForm(res) {
    const tmpl = res.uri_template;
    const names = templateVars(tmpl);
    const uri = h("code", { class: "template-uri" });
    const fields = names.map((name) => {
      const id = `tmpl-${++this.fieldSeq}`;
      return h("div", { class: "field template-field" },
        h("label", { for: id }, name),
        h("input", { type: "text", id, name, class: "template-input", spellcheck: "false", autocomplete: "off", required: true }));
    });
    const form = h("form", { class: "template-form", novalidate: true, "aria-label": `Read ${res.name || tmpl}` }, fields,
      h("div", { class: "template-row" }, h("span", { class: "muted small" }, "URI "), uri,
        h("button", { type: "submit", class: "small-button open" }, "Read")));
    const values = () => {
      const v = {};
      for (const el of form.querySelectorAll("input[name]")) if (el.value !== "") v[el.name] = el.value;
      return v;
    };
    const update = () => {
      uri.textContent = expandTemplate(tmpl, values());
    };
    form.addEventListener("input", update);
    this.suggestIn(form, { type: "ref/resource", uri: tmpl });
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      const empty = [...form.querySelectorAll("input[name]")].find((el) => el.value.trim() === "");
      if (empty) {
        empty.setAttribute("aria-invalid", "true");
        empty.focus();
        return;
      }
      for (const el of form.querySelectorAll("input[aria-invalid]")) el.removeAttribute("aria-invalid");
      this.readResource(expandTemplate(tmpl, values()), tmpl);
    });
    update();
    return form;
  }

  async readResource(uri, template) {
    if (!uri) return;
    const gw = this.gateway;
    for (const li of this.resourceList.querySelectorAll("li.active")) li.classList.remove("active");
    const li = template
      ? this.resourceList.querySelector(`li[data-template="${CSS.escape(template)}"]`)
      : this.resourceList.querySelector(`li[data-uri="${CSS.escape(uri)}"]`);
    li?.classList.add("active");
    dock(li, document.getElementById("tab-panel-resources"), this.resourceContent);
    this.resourceContent.dataset.state = "running";
    this.resourceContent.dataset.uri = uri;
    this.resourceContent.replaceChildren(h("div", { class: "muted" }, h("span", { class: "spinner", "aria-hidden": "true" }), " Reading ", h("code", null, uri), "…"));
    const r = await apiJSON(this.featurePath("resources/read"), { method: "POST", body: { uri } });
    if (gw !== this.gateway || this.resourceContent.dataset.uri !== uri) return;
    const res = r.data && r.data.result;
    if (!r.ok || !res) {
      this.resourceContent.dataset.state = "error";
      this.resourceContent.replaceChildren(h("div", { class: "note error" }, r.error || `request failed (${r.status})`));
      return;
    }
    this.resourceContent.dataset.state = res.is_error ? "error" : "ok";
    this.resourceContent.replaceChildren(h("div", { class: "result-head muted small" }, h("code", null, uri)), toolResult(res));
    reveal(this.resourceContent);
  }

  // ---- prompts ----

  async listPrompts() {
    const gw = this.gateway;
    this.loaded.add("prompts");
    this.promptStatus.textContent = "Listing prompts…";
    const r = await apiJSON(this.featurePath("prompts"), { method: "POST", body: {} });
    if (gw !== this.gateway) return;
    const list = r.data && Array.isArray(r.data.prompts) ? r.data.prompts : null;
    if (!list) {
      this.loaded.delete("prompts");
      this.promptStatus.replaceChildren(h("span", { class: "note error" }, r.error || "listing failed"));
      return;
    }
    this.promptStatus.textContent = list.length ? `${list.length} prompt${list.length === 1 ? "" : "s"}` : "This server offers no prompts.";
    this.undock();
    this.promptList.replaceChildren(...list.map((pr) => {
      const args = Array.isArray(pr.arguments) ? pr.arguments : [];
      return h("li", { class: "tool-item", dataset: { prompt: pr.name } },
        h("div", { class: "tool-head" }, h("span", { class: "feature-name" }, icon("message"), " ", h("code", null, pr.name)),
          h("button", { type: "button", class: "small-button open", "aria-label": `Get prompt ${pr.name}`, onclick: () => this.openPrompt(pr) }, "Get")),
        pr.description ? h("div", { class: "desc" }, pr.description) : null,
        args.length ? h("div", { class: "params" }, args.map((a) => h("span", { class: "param" + (a.required ? " req" : "") }, a.name))) : null);
    }));
  }

  // promptSchema turns a prompt's arguments (all strings) into a schema
  // for the form.
  promptSchema(pr) {
    const args = Array.isArray(pr.arguments) ? pr.arguments : [];
    const properties = {};
    for (const a of args) properties[a.name] = { type: "string", description: a.description || "" };
    return { type: "object", properties, required: args.filter((a) => a.required).map((a) => a.name) };
  }

  openPrompt(pr) {
    this.prompt = pr;
    for (const li of this.promptList.querySelectorAll("li.active")) li.classList.remove("active");
    const li = this.promptList.querySelector(`li[data-prompt="${CSS.escape(pr.name)}"]`);
    li?.classList.add("active");
    const f = this.promptForm;
    dock(li, document.getElementById("tab-panel-prompts"), f, this.promptResult);
    f.replaceChildren();
    buildForm(f, pr.name, this.promptSchema(pr), { onCancel: () => this.closePromptForm(), prefix: "prompt-arg-", submitID: "prompt-form-submit", verb: "Get", submitText: "Get prompt", errorID: "prompt-form-error" });
    this.suggestIn(f, { type: "ref/prompt", name: pr.name });
    this.promptResult.replaceChildren();
    delete this.promptResult.dataset.state;
    f.scrollIntoView({ block: "nearest" });
    (f.querySelector("input, textarea, button[type=submit]"))?.focus();
  }

  closePromptForm() {
    this.prompt = null;
    this.promptForm.hidden = true;
    this.promptForm.replaceChildren();
    for (const li of this.promptList.querySelectorAll("li.active")) li.classList.remove("active");
  }

  async getPrompt() {
    const pr = this.prompt;
    if (!pr) return;
    const gw = this.gateway;
    const schema = this.promptSchema(pr);
    const { inputs, errors } = collect(this.promptForm, schema, { prefix: "prompt-arg-" });
    if (Object.keys(errors).length) {
      showFormError(this.promptForm, "", errors);
      return;
    }
    showFormError(this.promptForm, "");
    this.promptResult.dataset.state = "running";
    this.promptResult.replaceChildren(h("div", { class: "muted" }, h("span", { class: "spinner", "aria-hidden": "true" }), ` Getting ${pr.name}…`));
    const r = await apiJSON(this.featurePath("prompts/get"), { method: "POST", body: { name: pr.name, arguments: inputs } });
    if (gw !== this.gateway || this.prompt !== pr) return;
    const msgs = r.data && Array.isArray(r.data.messages) ? r.data.messages : null;
    if (r.status === 422 || r.status === 400) {
      this.promptResult.dataset.state = "invalid";
      this.promptResult.replaceChildren();
      showFormError(this.promptForm, r.error || "invalid arguments");
      return;
    }
    if (!r.ok || !msgs) {
      this.promptResult.dataset.state = "error";
      this.promptResult.replaceChildren(h("div", { class: "note error" }, r.error || `request failed (${r.status})`));
      return;
    }
    this.promptResult.dataset.state = "ok";
    const text = promptText(msgs);
    this.promptResult.replaceChildren(
      h("div", { class: "result-head muted small" }, h("code", null, pr.name), ` · ${msgs.length} message${msgs.length === 1 ? "" : "s"}`),
      ...msgs.map((m) => h("div", { class: "prompt-message", dataset: { role: m.role || "" } },
        h("div", { class: "role" }, m.role || "message"), contentItem(m.content))),
      text ? h("div", { class: "form-actions" },
        h("button", { type: "button", id: "prompt-to-chat", class: "primary-button", onclick: () => this.onUsePrompt(text) }, "Use in chat")) : null);
    reveal(this.promptResult);
  }

  // suggestIn gives the text inputs of form the server's suggestions for
  // ref's arguments (completion/complete).
  suggestIn(form, ref) {
    const c = new Completer(this.featurePath("complete"), ref);
    for (const el of form.querySelectorAll("input[type=text][name]")) el.after(c.attach(el, () => argumentsOf(form, el)));
  }

  // ---- logs ----

  async loadLogs() {
    const gw = this.gateway;
    if (!gw) return;
    this.loaded.add("logs");
    if (!this.logList.childElementCount) this.logStatus.textContent = "Loading…";
    const r = await apiJSON(this.featurePath("logs"), { interactive: false });
    if (gw !== this.gateway) return;
    const logs = r.data && Array.isArray(r.data.logs) ? r.data.logs : null;
    if (!logs) {
      this.loaded.delete("logs");
      this.logStatus.replaceChildren(h("span", { class: "note error" }, r.error || "could not load the log"));
      return;
    }
    const status = logs.length ? `last ${logs.length} message${logs.length === 1 ? "" : "s"}, newest last` : "No log messages from this server yet.";
    if (this.logStatus.textContent !== status) this.logStatus.textContent = status;
    // Nothing new: leave the list (and the reader's place in it) alone.
    const key = `${logs.length}\u0000${JSON.stringify(logs.at(-1) ?? null)}`;
    if (key === this.logKey && this.logList.childElementCount === logs.length) return;
    this.logKey = key;
    this.logList.replaceChildren(...logs.map((e) => {
      const t = Date.parse(e.time);
      return h("li", { class: "log-line", dataset: { level: e.level || "" } },
        h("time", { datetime: e.time || undefined }, Number.isNaN(t) ? "" : new Date(t).toLocaleTimeString()),
        h("span", { class: "log-level" }, e.level || "?"),
        e.logger ? h("code", { class: "log-logger" }, e.logger) : null,
        h("span", { class: "log-data" }, typeof e.data === "string" ? e.data : JSON.stringify(e.data ?? "")));
    }));
    this.filterLogs();
    [...this.logList.children].filter((li) => !li.hidden).at(-1)?.scrollIntoView({ block: "nearest" });
  }

  // filterLogs shows the lines at the chosen level or above.
  filterLogs() {
    const min = LEVELS.indexOf(this.logLevel.value);
    let shown = 0;
    for (const li of this.logList.children) {
      const at = LEVELS.indexOf(li.dataset.level);
      li.hidden = at >= 0 && at < min;
      if (!li.hidden) shown++;
    }
    this.logList.dataset.shown = String(shown);
  }

  // followLogs reloads the log every LOGS_EVERY ms while the Logs tab is
  // open, "Live" is checked and the page is shown; else it stops.
  followLogs() {
    const want = this.tab === "logs" && !this.panel.hidden && this.gateway && this.logLive.checked && document.visibilityState !== "hidden";
    if (want && !this.logTimer) {
      this.logTimer = setInterval(() => {
        if (!this.logBusy) {
          this.logBusy = true;
          this.loadLogs().finally(() => {
            this.logBusy = false;
          });
        }
      }, LOGS_EVERY);
    } else if (!want && this.logTimer) {
      clearInterval(this.logTimer);
      this.logTimer = 0;
    }
  }

  close() {
    this.cancelRun();
    this.panel.hidden = true;
    this.followLogs();
    document.getElementById("layout").classList.remove("with-panel");
    const sel = this.gateway && document.querySelector(`#tree .node[data-id="${CSS.escape(this.gateway)}"] > [role=treeitem]`);
    if (sel) sel.focus();
  }

  refreshInfo() {
    if (!this.gateway) return;
    const s = this.treeView.server(this.gateway);
    const node = document.querySelector(`#tree .node[data-id="${CSS.escape(this.gateway)}"]`);
    const desc = node ? node.querySelector(":scope > .row .label")?.title || "" : "";
    const rows = [];
    if (s) {
      this.title.textContent = s.name || this.gateway;
      rows.push(h("div", { class: "server-line" }, this.treeView.badge(this.gateway), " ", h("code", null, this.gateway), " · ", s.transport || "?",
        s.calls !== undefined ? ` · ${plural(s.calls, "call")}` : "", s.failures ? `, ${s.failures} failed` : ""));
      // The error the last run shows already is not shown twice.
      if (s.last_error && !(this.shownError || "").includes(s.last_error)) rows.push(h("div", { class: "note error small" }, s.last_error));
      if (s.config_error) rows.push(h("div", { class: "note error small" }, s.config_error));
      if (s.circuit && s.circuit.state === "open") rows.push(h("div", { class: "note warning small" }, `Circuit open${s.circuit.retry_at ? ", retrying at " + new Date(s.circuit.retry_at).toLocaleTimeString() : ""}`));
    }
    if (desc) rows.push(h("div", { class: "desc" }, desc));
    this.info.replaceChildren(...rows);
  }

  async listTools() {
    if (!this.gateway) return;
    const gw = this.gateway;
    this.listButton.disabled = true;
    this.listStatus.textContent = "Listing tools…";
    this.list.setAttribute("aria-busy", "true");
    const r = await apiJSON(`/api/servers/${encodeURIComponent(this.serverName())}/list`, { method: "POST", body: {} });
    this.listButton.disabled = false;
    this.list.removeAttribute("aria-busy");
    if (gw !== this.gateway) return;
    const tools = toolsOf(r.data);
    if (!r.ok && !tools.length) {
      this.shownError = r.error || "listing failed";
      this.listStatus.replaceChildren(h("span", { class: "note error" }, this.shownError));
      this.refreshInfo();
      this.onServersChanged();
      return;
    }
    this.shownError = "";
    this.tools = tools;
    this.cache.set(gw, tools);
    this.listStatus.textContent = `${tools.length} tool${tools.length === 1 ? "" : "s"}` + (r.error ? ` (from cache: ${r.error})` : "");
    this.renderTools();
    this.onServersChanged();
  }

  renderTools() {
    const q = this.filter.value.trim().toLowerCase();
    this.filter.hidden = this.tools.length < 8;
    const shown = this.tools.filter((t) => !q || t.name.toLowerCase().includes(q) || String(t.description || "").toLowerCase().includes(q));
    this.list.replaceChildren(...shown.map((t) => toolCard(t,
      h("button", { type: "button", class: "small-button run", "aria-label": `Run ${t.name}`, onclick: () => this.openForm(t) }, "Run ", icon("play")))));
    const li = this.formTool && this.list.querySelector(`.tool-item[data-tool="${CSS.escape(this.formTool.name)}"]`);
    li?.classList.add("active");
    dock(li, document.getElementById("tab-panel-tools"), this.form, this.result);
  }

  openForm(tool) {
    this.cancelRun();
    this.formTool = tool;
    for (const el of this.list.querySelectorAll(".tool-item.active")) el.classList.remove("active");
    const li = this.list.querySelector(`.tool-item[data-tool="${CSS.escape(tool.name)}"]`);
    li?.classList.add("active");
    buildForm(this.form, tool.name, inputSchemaOf(tool), { onCancel: () => this.closeForm() });
    this.result.replaceChildren();
    delete this.result.dataset.state;
    // The form opens in the tool's card, where the click was.
    dock(li, document.getElementById("tab-panel-tools"), this.form, this.result);
    this.form.scrollIntoView({ block: "nearest" });
    const first = this.form.querySelector("input, select, textarea, button[type=submit]");
    if (first) first.focus();
  }

  closeForm() {
    if (this.cancelRun()) return; // the form stays, to run again
    this.formTool = null;
    this.form.hidden = true;
    this.form.replaceChildren();
    for (const el of this.list.querySelectorAll(".tool-item.active")) el.classList.remove("active");
  }

  // execute runs the form's tool with the user in the loop (panelrun.js):
  // progress, the server's questions and warnings show while it runs; the
  // form's Cancel cancels the call.
  async execute() {
    const tool = this.formTool;
    if (!tool || this.running) return;
    const schema = tool.inputs || tool.inputSchema || tool.input_schema || {};
    const { inputs, errors } = collect(this.form, schema);
    if (Object.keys(errors).length) {
      showFormError(this.form, "", errors);
      return;
    }
    showFormError(this.form, "");
    const submit = this.form.querySelector("button[type=submit]");
    submit.disabled = true;
    this.shownError = "";
    this.result.dataset.state = "running";
    const view = new RunView(tool.name);
    this.result.replaceChildren(view.el);
    reveal(this.result);
    const started = performance.now();
    const running = new AbortController();
    this.running = running;
    const r = await streamExecute(this.serverName(), { tool_name: tool.name, tool_inputs: inputs },
      { signal: running.signal, onEvent: (env) => view.event(env) });
    if (this.running === running) this.running = null;
    submit.disabled = false;
    view.end(r.cancelled ? "cancelled" : "done");
    const kept = view.empty ? [] : [view.el];
    if (r.cancelled) {
      this.result.dataset.state = "cancelled";
      this.onServersChanged();
      return;
    }
    const ms = Math.round(performance.now() - started);
    if (r.status === 422) {
      this.result.dataset.state = "invalid";
      this.result.replaceChildren(...kept);
      showFormError(this.form, r.error || "invalid inputs");
      return;
    }
    const res = r.data && "result" in r.data ? r.data.result : null;
    if (!r.ok && !res) {
      this.result.dataset.state = "error";
      this.shownError = r.error || `request failed (${r.status})`;
      this.result.replaceChildren(...kept, h("div", { class: "note error" }, this.shownError));
      this.onServersChanged();
      return;
    }
    this.result.dataset.state = res && res.is_error ? "error" : "ok";
    this.result.replaceChildren(...kept,
      h("div", { class: "result-head muted small" }, h("code", null, tool.name), ` · ${ms} ms`, r.error ? ` · ${r.error}` : ""),
      toolResult(res));
    reveal(this.result);
    this.onServersChanged();
  }

  // cancelRun cancels the running call, if any: the request ends, and the
  // service tells the server (notifications/cancelled). It reports whether
  // there was one.
  cancelRun() {
    if (!this.running) return false;
    this.running.abort();
    this.running = null;
    return true;
  }
}
