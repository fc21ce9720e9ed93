// settings.js: the agent's settings for this user, the config Elysia's
// Settings page keeps (GET and POST /user/config/<user>[/<id>]): how the
// agent describes itself, its end goal, the style of its messages, and
// the tree new conversations start with. They open every decision prompt
// of this user's queries (docs/DECISION_PROMPT.md). The model and its keys
// are the service's environment's, not set here.
//
// Markup (tests rely on it): #settings-button opens #settings-dialog with
// #settings-agent-description, #settings-end-goal, #settings-style,
// #settings-mode, #settings-save, #settings-close and #settings-status
// (role=status, data-ok="true"|"false" after a save).
import { apiJSON } from "./api.js";
import { h } from "./render.js";
import { icon } from "./icons.js";

const MODES = [
  ["one_branch", "One branch: text answer, summary and every MCP server"],
  ["multi_branch", "Multi-branch: text answer, summary, and a branch of MCP servers"],
  ["empty", "Empty: the MCP servers only"],
];

export class Settings {
  constructor({ user }) {
    this.user = user;
    this.configID = "";
    this.name = "";
  }

  install() {
    const keyButton = document.getElementById("api-key-button");
    if (!keyButton || document.getElementById("settings-button")) return;
    keyButton.before(h("button", {
      type: "button", id: "settings-button", class: "icon-button", title: "Agent settings",
      "aria-label": "Agent settings", onclick: () => this.open(),
    }, icon("sliders")));
    const area = (id, label, hint) => [
      h("label", { for: id }, label),
      h("textarea", { id, name: id, rows: "3", maxlength: "4000", "aria-describedby": id + "-hint" }),
      h("p", { id: id + "-hint", class: "muted small" }, hint),
    ];
    const mode = h("select", { id: "settings-mode", name: "settings-mode" },
      ...MODES.map(([value, text]) => h("option", { value }, text)));
    const form = h("form", { id: "settings-form", method: "dialog" },
      h("h2", { id: "settings-title" }, "Agent settings"),
      h("p", { class: "muted small" }, "For your queries only. The model and its keys come from the service's environment."),
      ...area("settings-agent-description", "Agent description", "What the agent is for."),
      ...area("settings-end-goal", "End goal", "When a query is done."),
      ...area("settings-style", "Style", "How the agent's messages read."),
      h("label", { for: "settings-mode" }, "New conversations start with"), mode,
      h("p", { id: "settings-status", class: "muted small", role: "status" }),
      h("div", { class: "dialog-actions" },
        h("button", { type: "button", id: "settings-close", class: "small-button", onclick: () => this.dialog.close() }, "Close"),
        h("button", { type: "submit", id: "settings-save", class: "primary-button" }, "Save")));
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      this.save();
    });
    this.dialog = h("dialog", { id: "settings-dialog", class: "dialog settings-dialog", "aria-labelledby": "settings-title" }, form);
    document.body.append(this.dialog);
  }

  async open() {
    this.status("Loading…", null);
    if (typeof this.dialog.showModal === "function") this.dialog.showModal();
    else this.dialog.setAttribute("open", "");
    const r = await apiJSON(`/user/config/${encodeURIComponent(this.user)}`);
    const c = r.data && r.data.config;
    if (!r.ok || !c) {
      this.status(`Could not load the settings: ${r.error}`, false);
      return;
    }
    this.configID = c.id || "default";
    this.name = c.name || "";
    this.field("settings-agent-description").value = c.agent_description || "";
    this.field("settings-end-goal").value = c.end_goal || "";
    this.field("settings-style").value = c.style || "";
    this.field("settings-mode").value = c.branch_initialisation || "one_branch";
    this.status("", null);
    this.field("settings-agent-description").focus();
  }

  async save() {
    const body = {
      name: this.name, default: true,
      config: {
        agent_description: this.field("settings-agent-description").value,
        end_goal: this.field("settings-end-goal").value,
        style: this.field("settings-style").value,
        branch_initialisation: this.field("settings-mode").value,
      },
    };
    this.status("Saving…", null);
    const r = await apiJSON(`/user/config/${encodeURIComponent(this.user)}/${encodeURIComponent(this.configID || "default")}`, { method: "POST", body });
    if (!r.ok) {
      this.status(`Not saved: ${r.error}`, false);
      return;
    }
    const warnings = (r.data && Array.isArray(r.data.warnings)) ? r.data.warnings : [];
    this.status(["Saved: your next queries use these settings."].concat(warnings).join(" "), true);
    // A conversation not created yet starts with the tree they name.
    window.dispatchEvent(new Event("elysia-settings"));
  }

  field(id) {
    return document.getElementById(id);
  }

  status(text, ok) {
    const el = this.field("settings-status");
    el.textContent = text;
    el.className = `small ${ok === false ? "error" : ok ? "success" : "muted"}`;
    el.dataset.ok = ok === null ? "" : String(ok);
  }
}
