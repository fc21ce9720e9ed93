// resourcetab.js: the gateway panel's Resources tab: the server's
// resources and resource templates; a click reads one. A template is a
// form with a field per variable (with the server's suggestions) that
// builds the URI.
//
// Selectors for tests: #resource-list li[data-uri] button.open (templates
// are li[data-template] with a form: an input named after each variable,
// the URI it builds in .template-uri, and button.open), the content in
// #resource-content[data-state].
import { apiJSON } from "./api.js";
import { h, toolResult } from "./render.js";
import { icon } from "./icons.js";
import { expandTemplate, templateVars } from "./uritemplate.js";
import { suggestIn } from "./complete.js";
import { dock, listFeature, reveal } from "./panelkit.js";

export class ResourceTab {
  // panel is the ToolPanel: its gateway, featurePath and loaded tabs.
  constructor(panel) {
    this.panel = panel;
    this.home = document.getElementById("tab-panel-resources");
    this.status = document.getElementById("resource-status");
    this.list = document.getElementById("resource-list");
    this.content = document.getElementById("resource-content");
    this.fieldSeq = 0; // ids of template fields
  }

  // reset forgets the last gateway's resources.
  reset() {
    this.undock();
    this.list.replaceChildren();
    this.status.textContent = "";
    this.content.replaceChildren();
    delete this.content.dataset.state;
  }

  // undock takes the content out of the list, before the list is replaced.
  undock() {
    dock(null, this.home, this.content);
  }

  async load() {
    const list = await listFeature(this.panel, "resources", this.status);
    if (!list) return;
    this.undock();
    this.list.replaceChildren(...list.map((res) => this.item(res)));
  }

  item(res) {
    const head = (action) => h("div", { class: "tool-head" },
      h("span", { class: "feature-name" }, icon("file"), " ", res.name || res.uri || res.uri_template), action);
    const meta = [res.mime_type, res.description].filter(Boolean).join(" · ");
    if (!res.uri && res.uri_template) {
      return h("li", { class: "tool-item", dataset: { template: res.uri_template } },
        head(null), meta ? h("div", { class: "desc" }, meta) : null, this.templateForm(res));
    }
    return h("li", { class: "tool-item", dataset: { uri: res.uri } },
      head(h("button", { type: "button", class: "small-button open", "aria-label": `Read ${res.name || res.uri}`, onclick: () => this.read(res.uri) }, "Read")),
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
    suggestIn(form, this.panel.featurePath("complete"), { type: "ref/resource", uri: tmpl });
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      const empty = [...form.querySelectorAll("input[name]")].find((el) => el.value.trim() === "");
      if (empty) {
        empty.setAttribute("aria-invalid", "true");
        empty.focus();
        return;
      }
      for (const el of form.querySelectorAll("input[aria-invalid]")) el.removeAttribute("aria-invalid");
      this.read(expandTemplate(tmpl, values()), tmpl);
    });
    update();
    return form;
  }

  async read(uri, template) {
    if (!uri) return;
    const p = this.panel;
    const gw = p.gateway;
    for (const li of this.list.querySelectorAll("li.active")) li.classList.remove("active");
    const li = template
      ? this.list.querySelector(`li[data-template="${CSS.escape(template)}"]`)
      : this.list.querySelector(`li[data-uri="${CSS.escape(uri)}"]`);
    li?.classList.add("active");
    dock(li, this.home, this.content);
    this.content.dataset.state = "running";
    this.content.dataset.uri = uri;
    this.content.replaceChildren(h("div", { class: "muted" }, h("span", { class: "spinner", "aria-hidden": "true" }), " Reading ", h("code", null, uri), "…"));
    const r = await apiJSON(p.featurePath("resources/read"), { method: "POST", body: { uri } });
    if (gw !== p.gateway || this.content.dataset.uri !== uri) return;
    const res = r.data && r.data.result;
    if (!r.ok || !res) {
      this.content.dataset.state = "error";
      this.content.replaceChildren(h("div", { class: "note error" }, r.error || `request failed (${r.status})`));
      return;
    }
    this.content.dataset.state = res.is_error ? "error" : "ok";
    this.content.replaceChildren(h("div", { class: "result-head muted small" }, h("code", null, uri)), toolResult(res));
    reveal(this.content);
  }
}
