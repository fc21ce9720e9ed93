// toolpanel.js: the gateway panel, one tab per thing an MCP server offers.
// Tools: "List tools" calls the gateway's list action, "Run" turns a tool's
// input schema into a form, and the form calls the execute action and
// renders what comes back. Resources: the server's resources (and resource
// templates); a click reads one. Prompts: the server's prompts; a click
// opens a form for its arguments and gets the prompt's messages, which
// "Use in chat" puts into the query box. Logs: the server's last log
// messages, followed while the tab is open. History: the requests sent to
// the server with their answers, its notifications and its stderr. A tab
// loads when the user opens it (or presses its refresh).
//
// Resources, Prompts, Logs and History are their own modules
// (resourcetab.js, prompttab.js, logtab.js, historytab.js), with their
// selectors.
//
// Selectors for tests: #tab-tools, #tab-resources, #tab-prompts, #tab-logs,
// #tab-history (aria-selected).
import { apiJSON } from "./api.js";
import { h, inputSchemaOf, toolCard, toolResult } from "./render.js";
import { icon } from "./icons.js";
import { buildForm, collect, showFormError } from "./schemaform.js";
import { RunView, streamExecute } from "./panelrun.js";
import { ResourceTab } from "./resourcetab.js";
import { PromptTab } from "./prompttab.js";
import { LogTab } from "./logtab.js";
import { HistoryTab } from "./historytab.js";
import { dock, plural, reveal } from "./panelkit.js";
import { errorNote, plainNote, serverProblem } from "./plain.js";
import { PinView, pinBadge } from "./pins.js";
import { copiesTable } from "./copies.js";

const TABS = ["tools", "resources", "prompts", "logs", "history"];

// toolsOf reads the tool list from a list response, whichever shape the
// service chose: {tools}, {result: {objects}}, {objects}, {result: [...]}.
export function toolsOf(data) {
  if (!data || typeof data !== "object") return [];
  const cands = [data.tools, data.result && data.result.objects, data.objects, data.result && data.result.tools, data.result];
  for (const c of cands) if (Array.isArray(c)) return c.filter((t) => t && typeof t === "object" && t.name);
  return [];
}

export class ToolPanel {
  // onUsePrompt(text) puts a prompt's text into the chat's input box.
  constructor({ treeView, onServersChanged, onUsePrompt }) {
    this.treeView = treeView;
    this.onServersChanged = onServersChanged || (() => {});
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
    this.loaded = new Set(); // tabs loaded for this gateway
    this.resources = new ResourceTab(this);
    this.prompts = new PromptTab(this, onUsePrompt || (() => {}));
    this.logs = new LogTab(this);
    this.history = new HistoryTab(this);
    this.pins = new PinView(this);

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

    document.getElementById("tool-panel-close").addEventListener("click", () => this.close());
    // While it lists, the button says so (aria-disabled) but keeps the
    // keyboard: a disabled button would drop the focus out of the panel.
    this.listButton.addEventListener("click", () => this.listButton.getAttribute("aria-disabled") !== "true" && this.listTools());
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
      this.shownProblem = "";
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
    this.logs.follow();
    this.history.follow();
    if (!this.gateway || this.loaded.has(name)) return;
    if (name === "resources") this.resources.load();
    else if (name === "prompts") this.prompts.load();
    else if (name === "logs") this.logs.load();
    else if (name === "history") this.history.load();
  }

  // resetFeatures forgets the resources, prompts, logs and history of the
  // last gateway.
  resetFeatures() {
    this.loaded.clear();
    this.resources.reset();
    this.prompts.reset();
    this.logs.reset();
    this.history.reset();
  }

  // featurePath is the path of a route under /api/servers/<name>/.
  featurePath(what) {
    return `/api/servers/${encodeURIComponent(this.serverName())}/${what}`;
  }

  // close hides the panel and gives the keyboard back to the gateway's
  // row in the tree, or, when the tree is in a closed drawer (a narrow
  // screen), to the button that opens the drawer.
  close() {
    this.cancelRun();
    this.panel.hidden = true;
    this.logs.follow();
    this.history.follow();
    document.getElementById("layout").classList.remove("with-panel");
    const sidebar = document.getElementById("sidebar");
    const drawerClosed = getComputedStyle(sidebar).position === "fixed" && !document.body.classList.contains("sidebar-open");
    const row = this.gateway && document.querySelector(`#tree .node[data-id="${CSS.escape(this.gateway)}"] > [role=treeitem]`);
    if (row && !drawerClosed) row.focus();
    else document.getElementById("sidebar-toggle").focus();
  }

  // isOpen reports whether the panel is shown.
  get isOpen() {
    return !this.panel.hidden;
  }

  // refreshInfo shows the server's status: its state, what is wrong with
  // it in plain words (the error as it was one click away), and its
  // description. What the model reads about the gateway (its tools' names
  // and how to call them) is folded away: it is written for the model.
  refreshInfo() {
    if (!this.gateway) return;
    const s = this.treeView.server(this.gateway);
    const node = document.querySelector(`#tree .node[data-id="${CSS.escape(this.gateway)}"]`);
    const modelDesc = node ? node.querySelector(":scope > .row .label")?.title || "" : "";
    const rows = [];
    if (s) {
      this.title.textContent = s.name || this.gateway;
      const pins = pinBadge(s);
      rows.push(h("div", { class: "server-line" }, this.treeView.badge(this.gateway), " ", pins, pins ? " " : "", h("code", null, this.gateway), " · ", s.transport || "?",
        s.calls !== undefined ? ` · ${plural(s.calls, "call")}` : "", s.failures ? `, ${s.failures} failed` : ""));
      const copies = copiesTable(s);
      if (copies) rows.push(copies);
      // The error the last run shows already is not shown twice.
      const problem = serverProblem(s);
      const shown = (s.last_error && (this.shownError || "").includes(s.last_error)) || (problem && this.shownProblem === problem.kind);
      if (problem && !shown) rows.push(plainNote(problem, s.last_error));
      else if (!problem && s.last_error && !shown) rows.push(h("div", { class: "note error small" }, s.last_error));
      if (s.config_error) rows.push(h("div", { class: "note error small" }, s.config_error));
      if (s.circuit && s.circuit.state === "open") rows.push(h("div", { class: "note warning small" }, `Circuit open${s.circuit.retry_at ? ", retrying at " + new Date(s.circuit.retry_at).toLocaleTimeString() : ""}`));
      if (s.description && s.description !== modelDesc) rows.push(h("div", { class: "desc" }, s.description));
    }
    if (modelDesc) rows.push(h("details", { class: "model-desc small" }, h("summary", { class: "muted" }, "What the model reads about it"), h("div", { class: "desc" }, modelDesc)));
    this.info.replaceChildren(...rows);
    this.pins.update(s);
  }

  async listTools() {
    if (!this.gateway) return;
    const gw = this.gateway;
    this.listButton.setAttribute("aria-disabled", "true");
    this.listStatus.textContent = "Listing tools…";
    this.list.setAttribute("aria-busy", "true");
    const r = await apiJSON(`/api/servers/${encodeURIComponent(this.serverName())}/list`, { method: "POST", body: {} });
    this.listButton.removeAttribute("aria-disabled");
    this.list.removeAttribute("aria-busy");
    if (gw !== this.gateway) return;
    const tools = toolsOf(r.data);
    if (!r.ok && !tools.length) {
      this.shownError = r.error || "listing failed";
      const note = errorNote(this.shownError, this.treeView.server(gw));
      this.shownProblem = note.dataset.problem || "";
      this.listStatus.replaceChildren(note);
      this.refreshInfo();
      this.onServersChanged();
      return;
    }
    this.shownError = "";
    this.shownProblem = "";
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
    this.shownProblem = "";
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
      const note = errorNote(this.shownError, this.treeView.server(this.gateway));
      this.shownProblem = note.dataset.problem || "";
      this.result.replaceChildren(...kept, note);
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
