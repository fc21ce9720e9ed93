// toolpanel.js: the gateway panel. "List tools" calls the gateway's list
// action, "Run" turns a tool's input schema into a form, and the form calls
// the execute action and renders what comes back.
import { apiJSON } from "./api.js";
import { h, inputSchemaOf, toolCard, toolResult } from "./render.js";
import { icon } from "./icons.js";
import { buildForm, collect, showFormError } from "./schemaform.js";

// toolsOf reads the tool list from a list response, whichever shape the
// service chose: {tools}, {result: {objects}}, {objects}, {result: [...]}.
export function toolsOf(data) {
  if (!data || typeof data !== "object") return [];
  const cands = [data.tools, data.result && data.result.objects, data.objects, data.result && data.result.tools, data.result];
  for (const c of cands) if (Array.isArray(c)) return c.filter((t) => t && typeof t === "object" && t.name);
  return [];
}

export class ToolPanel {
  constructor({ treeView, onServersChanged }) {
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

    document.getElementById("tool-panel-close").addEventListener("click", () => this.close());
    this.listButton.addEventListener("click", () => this.listTools());
    this.filter.addEventListener("input", () => this.renderTools());
    this.form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      this.execute();
    });
    this.panel.addEventListener("keydown", (ev) => {
      if (ev.key === "Escape" && !ev.defaultPrevented) this.close();
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
      this.closeForm();
      this.result.replaceChildren();
      delete this.result.dataset.state;
    }
    this.listButton.focus();
  }

  close() {
    this.panel.hidden = true;
    document.getElementById("layout").classList.remove("with-panel");
    const sel = this.gateway && document.querySelector(`#tree .node[data-id="${CSS.escape(this.gateway)}"] > .row .label`);
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
        s.calls !== undefined ? ` · ${s.calls} calls` : "", s.failures ? `, ${s.failures} failed` : ""));
      if (s.last_error) rows.push(h("div", { class: "note error small" }, s.last_error));
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
      this.listStatus.replaceChildren(h("span", { class: "note error" }, r.error || "listing failed"));
      this.onServersChanged();
      return;
    }
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
  }

  openForm(tool) {
    this.formTool = tool;
    for (const el of this.list.querySelectorAll(".tool-item.active")) el.classList.remove("active");
    this.list.querySelector(`.tool-item[data-tool="${CSS.escape(tool.name)}"]`)?.classList.add("active");
    buildForm(this.form, tool.name, inputSchemaOf(tool), { onCancel: () => this.closeForm() });
    this.result.replaceChildren();
    delete this.result.dataset.state;
    this.form.scrollIntoView({ block: "nearest", behavior: "smooth" });
    const first = this.form.querySelector("input, select, textarea, button[type=submit]");
    if (first) first.focus();
  }

  closeForm() {
    this.formTool = null;
    this.form.hidden = true;
    this.form.replaceChildren();
    for (const el of this.list.querySelectorAll(".tool-item.active")) el.classList.remove("active");
  }

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
    this.result.dataset.state = "running";
    this.result.replaceChildren(h("div", { class: "muted" }, h("span", { class: "spinner", "aria-hidden": "true" }), ` Running ${tool.name}…`));
    const started = performance.now();
    this.running = apiJSON(`/api/servers/${encodeURIComponent(this.serverName())}/execute`, {
      method: "POST", body: { tool_name: tool.name, tool_inputs: inputs },
    });
    const r = await this.running;
    this.running = null;
    submit.disabled = false;
    const ms = Math.round(performance.now() - started);
    if (r.status === 422) {
      this.result.dataset.state = "invalid";
      this.result.replaceChildren();
      showFormError(this.form, r.error || "invalid inputs");
      return;
    }
    const res = r.data && "result" in r.data ? r.data.result : null;
    if (!r.ok && !res) {
      this.result.dataset.state = "error";
      this.result.replaceChildren(h("div", { class: "note error" }, r.error || `request failed (${r.status})`));
      this.onServersChanged();
      return;
    }
    this.result.dataset.state = res && res.is_error ? "error" : "ok";
    this.result.replaceChildren(
      h("div", { class: "result-head muted small" }, h("code", null, tool.name), ` · ${ms} ms`, r.error ? ` · ${r.error}` : ""),
      toolResult(res));
    this.onServersChanged();
  }
}
