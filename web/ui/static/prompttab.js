// prompttab.js: the gateway panel's Prompts tab: the server's prompts; a
// click opens a form for a prompt's arguments (with the server's
// suggestions), which gets its messages; "Use in chat" puts them into the
// query box.
//
// Selectors for tests: #prompt-list li[data-prompt] button.open,
// #prompt-form with a control named after each argument and
// #prompt-form-submit, the messages in #prompt-result[data-state] as
// .prompt-message[data-role], and #prompt-to-chat.
import { apiJSON } from "./api.js";
import { h, contentItem } from "./render.js";
import { icon } from "./icons.js";
import { buildForm, collect, showFormError } from "./schemaform.js";
import { suggestIn } from "./complete.js";
import { promptText } from "./promptchat.js";
import { dock, listFeature, reveal } from "./panelkit.js";

// promptSchema turns a prompt's arguments (all strings) into a schema for
// the form.
function promptSchema(pr) {
  const args = Array.isArray(pr.arguments) ? pr.arguments : [];
  const properties = {};
  for (const a of args) properties[a.name] = { type: "string", description: a.description || "" };
  return { type: "object", properties, required: args.filter((a) => a.required).map((a) => a.name) };
}

export class PromptTab {
  // panel is the ToolPanel: its gateway, featurePath and loaded tabs;
  // onUse(text) puts a prompt's text into the chat's query box.
  constructor(panel, onUse) {
    this.panel = panel;
    this.onUse = onUse;
    this.home = document.getElementById("tab-panel-prompts");
    this.status = document.getElementById("prompt-status");
    this.list = document.getElementById("prompt-list");
    this.form = document.getElementById("prompt-form");
    this.result = document.getElementById("prompt-result");
    this.prompt = null;
    this.form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      this.get();
    });
  }

  // reset forgets the last gateway's prompts.
  reset() {
    this.undock();
    this.list.replaceChildren();
    this.status.textContent = "";
    this.closeForm();
  }

  // undock takes the form and the result out of the list, before the list
  // is replaced.
  undock() {
    dock(null, this.home, this.form, this.result);
  }

  async load() {
    const list = await listFeature(this.panel, "prompts", this.status);
    if (!list) return;
    this.undock();
    this.list.replaceChildren(...list.map((pr) => {
      const args = Array.isArray(pr.arguments) ? pr.arguments : [];
      return h("li", { class: "tool-item", dataset: { prompt: pr.name } },
        h("div", { class: "tool-head" }, h("span", { class: "feature-name" }, icon("message"), " ", h("code", null, pr.name)),
          h("button", { type: "button", class: "small-button open", "aria-label": `Get prompt ${pr.name}`, onclick: () => this.open(pr) }, "Get")),
        pr.description ? h("div", { class: "desc" }, pr.description) : null,
        args.length ? h("div", { class: "params" }, args.map((a) => h("span", { class: "param" + (a.required ? " req" : "") }, a.name))) : null);
    }));
  }

  // open shows pr's form in its item, where the click was.
  open(pr) {
    this.prompt = pr;
    for (const li of this.list.querySelectorAll("li.active")) li.classList.remove("active");
    const li = this.list.querySelector(`li[data-prompt="${CSS.escape(pr.name)}"]`);
    li?.classList.add("active");
    const f = this.form;
    dock(li, this.home, f, this.result);
    f.replaceChildren();
    buildForm(f, pr.name, promptSchema(pr), { onCancel: () => this.closeForm(), prefix: "prompt-arg-", submitID: "prompt-form-submit", verb: "Get", submitText: "Get prompt", errorID: "prompt-form-error" });
    suggestIn(f, this.panel.featurePath("complete"), { type: "ref/prompt", name: pr.name });
    this.result.replaceChildren();
    delete this.result.dataset.state;
    reveal(f);
    (f.querySelector("input, textarea, button[type=submit]"))?.focus();
  }

  closeForm() {
    this.prompt = null;
    this.form.hidden = true;
    this.form.replaceChildren();
    for (const li of this.list.querySelectorAll("li.active")) li.classList.remove("active");
  }

  // get asks the server for the prompt filled with the form's arguments.
  async get() {
    const pr = this.prompt;
    if (!pr) return;
    const p = this.panel;
    const gw = p.gateway;
    const { inputs, errors } = collect(this.form, promptSchema(pr), { prefix: "prompt-arg-" });
    if (Object.keys(errors).length) {
      showFormError(this.form, "", errors);
      return;
    }
    showFormError(this.form, "");
    this.result.dataset.state = "running";
    this.result.replaceChildren(h("div", { class: "muted" }, h("span", { class: "spinner", "aria-hidden": "true" }), ` Getting ${pr.name}…`));
    const r = await apiJSON(p.featurePath("prompts/get"), { method: "POST", body: { name: pr.name, arguments: inputs } });
    if (gw !== p.gateway || this.prompt !== pr) return;
    const msgs = r.data && Array.isArray(r.data.messages) ? r.data.messages : null;
    if (r.status === 422 || r.status === 400) {
      this.result.dataset.state = "invalid";
      this.result.replaceChildren();
      showFormError(this.form, r.error || "invalid arguments");
      return;
    }
    if (!r.ok || !msgs) {
      this.result.dataset.state = "error";
      this.result.replaceChildren(h("div", { class: "note error" }, r.error || `request failed (${r.status})`));
      return;
    }
    this.result.dataset.state = "ok";
    const text = promptText(msgs);
    this.result.replaceChildren(
      h("div", { class: "result-head muted small" }, h("code", null, pr.name), ` · ${msgs.length} message${msgs.length === 1 ? "" : "s"}`),
      ...msgs.map((m) => h("div", { class: "prompt-message", dataset: { role: m.role || "" } },
        h("div", { class: "role" }, m.role || "message"), contentItem(m.content))),
      text ? h("div", { class: "form-actions" },
        h("button", { type: "button", id: "prompt-to-chat", class: "primary-button", onclick: () => this.onUse(text) }, "Use in chat")) : null);
    reveal(this.result);
  }
}
