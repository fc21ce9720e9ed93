// schemaform.js: a form generated from a tool's JSON input schema, and the
// reverse step that turns the form back into tool_inputs.
//
// string → text input (enum → select, format date/email/uri → date, email,
//   url input)
// integer / number → number input with minimum / maximum
// boolean → checkbox
// enum, or oneOf / anyOf of consts → select; the labels come from each
//   const's title or the legacy enumNames
// array whose items are an enum (or anyOf / oneOf of consts) → checkboxes
// array of strings / numbers → comma-separated input
// object and anything else → JSON textarea
//
// The same form serves the tool panel and a server's question in the chat
// (elicit.js); each gives its controls ids of its own with a prefix.
import { h, prettyJSON } from "./render.js";

function mainType(schema) {
  if (!schema || typeof schema !== "object") return "";
  let t = schema.type;
  if (Array.isArray(t)) t = t.find((x) => x !== "null") || t[0];
  if (!t && Array.isArray(schema.enum)) t = typeof schema.enum[0] === "number" ? "number" : "string";
  if (!t && schema.properties) t = "object";
  if (!t) {
    const alt = (schema.anyOf || schema.oneOf || []).find((s) => s && s.type && s.type !== "null");
    if (alt) return mainType(alt);
  }
  return t || "";
}

function enumOf(schema) {
  if (!schema || typeof schema !== "object") return null;
  if (Array.isArray(schema.enum)) return schema.enum;
  const alt = (schema.oneOf || schema.anyOf || []).filter((s) => s && "const" in s);
  return alt.length ? alt.map((s) => s.const) : null;
}

// enumLabels returns what the user reads for each value of enumOf(schema):
// a const's title, the legacy enumNames, or the value itself.
function enumLabels(schema) {
  const values = enumOf(schema) || [];
  if (Array.isArray(schema.enum)) {
    const names = Array.isArray(schema.enumNames) && schema.enumNames.length === values.length ? schema.enumNames : null;
    return values.map((v, i) => String(names ? names[i] : v));
  }
  const alt = (schema.oneOf || schema.anyOf || []).filter((s) => s && "const" in s);
  return alt.map((s) => String(s.title ?? s.const));
}

// INPUT_FORMATS are the string formats with an input type of their own.
const INPUT_FORMATS = { date: "date", email: "email", uri: "url" };

function fieldKind(schema) {
  const t = mainType(schema);
  const en = enumOf(schema);
  if (en && (t === "string" || t === "integer" || t === "number" || t === "")) return "enum";
  if (t === "string") return INPUT_FORMATS[schema.format] || "string";
  if (t === "integer" || t === "number") return t;
  if (t === "boolean") return "boolean";
  if (t === "array") {
    if (enumOf(schema.items)) return "multi";
    const it = mainType(schema.items || {});
    if (it === "string" || it === "integer" || it === "number") return "list:" + it;
  }
  return "json";
}

// fieldID is the DOM id of a property's control: prefix (the tool panel's
// "field-" by default) and the property; tests may use
// #tool-form [name="<property>"] instead.
export function fieldID(name, prefix = "field-") {
  return prefix + String(name).replace(/[^A-Za-z0-9_-]/g, "_");
}

// buildForm fills form with a control per property of schema. It returns
// nothing; collect(form, schema) reads the values back.
// The tool panel's tool form is the default; the prompt form passes its own
// prefix, ids and words.
export function buildForm(form, toolName, schema, {
  onCancel, prefix = "field-", verb = "Run", submitText = "Run", submitID = "tool-form-submit", errorID = "tool-form-error",
} = {}) {
  form.replaceChildren();
  form.dataset.tool = toolName;
  const s = schema && typeof schema === "object" ? schema : {};
  const props = s.properties && typeof s.properties === "object" ? s.properties : null;
  form.append(h("h3", null, verb + " ", h("code", null, toolName)));
  if (!props || mainType(s) !== "object" && mainType(s) !== "") {
    form.append(field("__raw__", { type: "object", description: "All tool inputs as one JSON object" }, true, "tool_inputs", prefix));
  } else if (Object.keys(props).length === 0) {
    form.append(h("p", { class: "muted small" }, verb === "Run" ? "This tool takes no inputs." : "No arguments."));
  } else {
    form.append(...buildFields(s, { prefix }));
  }
  form.append(
    h("div", { id: errorID, class: "form-error", role: "alert", hidden: true }),
    h("div", { class: "form-actions" },
      h("button", { type: "button", class: "small-button", onclick: () => onCancel && onCancel() }, "Cancel"),
      h("button", { type: "submit", class: "primary-button", id: submitID }, submitText)),
  );
  form.hidden = false;
}

// buildFields returns a control per property of an object schema, with
// defaults filled in; ids start with prefix. requiredFirst puts the
// required properties first (a schema relayed through Go has lost its
// order: its properties come sorted by name).
export function buildFields(schema, { prefix = "field-", requiredFirst = false } = {}) {
  const props = schema && schema.properties && typeof schema.properties === "object" ? schema.properties : {};
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  const entries = Object.entries(props);
  if (requiredFirst) entries.sort(([a], [b]) => Number(required.has(b)) - Number(required.has(a)));
  return entries.map(([name, ps]) => field(name, ps || {}, required.has(name), name, prefix));
}

function field(name, schema, isRequired, label = name, prefix = "field-") {
  const kind = fieldKind(schema);
  const id = fieldID(name, prefix);
  const helpID = id + "-help";
  const desc = schema.description || "";
  const hints = [];
  if (schema.minimum !== undefined) hints.push(`≥ ${schema.minimum}`);
  if (schema.exclusiveMinimum !== undefined && typeof schema.exclusiveMinimum === "number") hints.push(`> ${schema.exclusiveMinimum}`);
  if (schema.maximum !== undefined) hints.push(`≤ ${schema.maximum}`);
  if (schema.exclusiveMaximum !== undefined && typeof schema.exclusiveMaximum === "number") hints.push(`< ${schema.exclusiveMaximum}`);
  if (schema.pattern) hints.push(`pattern ${schema.pattern}`);
  if (schema.format && !Object.values(INPUT_FORMATS).includes(kind)) hints.push(schema.format);
  if (kind === "multi" && (schema.minItems !== undefined || schema.maxItems !== undefined)) {
    hints.push(schema.maxItems === undefined ? `at least ${schema.minItems}` : schema.minItems === undefined ? `at most ${schema.maxItems}` : `${schema.minItems} to ${schema.maxItems}`);
  }
  if (kind.startsWith("list:")) hints.push("comma-separated");
  const help = desc || hints.length ? h("div", { id: helpID, class: "help" }, desc, hints.length ? h("span", { class: "hints" }, (desc ? " · " : "") + hints.join(", ")) : null) : null;
  const common = { id, name, "aria-describedby": help ? helpID : undefined, "aria-required": isRequired ? "true" : undefined, dataset: { kind } };
  const dflt = schema.default;
  let control;
  switch (kind) {
    case "enum": {
      const values = enumOf(schema);
      const labels = enumLabels(schema);
      control = h("select", common,
        isRequired && dflt === undefined ? h("option", { value: "", disabled: true, selected: true }, "choose…") : h("option", { value: "" }, "—"),
        values.map((v, i) => h("option", { value: String(i), selected: dflt !== undefined && v === dflt }, labels[i])));
      break;
    }
    case "multi": {
      // A group of checkboxes; the group holds the id and the kind.
      const values = enumOf(schema.items);
      const labels = enumLabels(schema.items);
      const chosen = Array.isArray(dflt) ? dflt : [];
      control = h("div", { ...common, name: undefined, role: "group", class: "choices", "aria-labelledby": id + "-label" },
        values.map((v, i) => h("label", { class: "choice" },
          h("input", { type: "checkbox", name, value: String(i), checked: chosen.includes(v) }), " ", labels[i])));
      break;
    }
    case "integer":
    case "number": {
      const min = schema.minimum ?? (typeof schema.exclusiveMinimum === "number" ? schema.exclusiveMinimum + (kind === "integer" ? 1 : 0) : undefined);
      const max = schema.maximum ?? (typeof schema.exclusiveMaximum === "number" ? schema.exclusiveMaximum - (kind === "integer" ? 1 : 0) : undefined);
      control = h("input", { ...common, type: "number", step: kind === "integer" ? "1" : "any", min, max, value: dflt, inputmode: kind === "integer" ? "numeric" : "decimal" });
      break;
    }
    case "boolean":
      control = h("input", { ...common, type: "checkbox", checked: dflt === true });
      break;
    case "date":
    case "email":
    case "url":
      control = h("input", { ...common, type: kind, value: dflt, placeholder: kind === "email" ? "name@example.org" : kind === "url" ? "a web address" : undefined });
      break;
    case "string": {
      const long = (schema.maxLength ?? 0) > 200 || /body|content|text|description|notes?/i.test(name) && !schema.maxLength;
      control = long
        ? h("textarea", { ...common, rows: 3 }, dflt ?? "")
        : h("input", { ...common, type: "text", value: dflt, minlength: schema.minLength, maxlength: schema.maxLength, pattern: schema.pattern, placeholder: schema.examples && schema.examples[0] !== undefined ? String(schema.examples[0]) : undefined });
      break;
    }
    default:
      if (kind.startsWith("list:")) {
        control = h("input", { ...common, type: "text", value: Array.isArray(dflt) ? dflt.join(", ") : undefined, placeholder: "a, b, c" });
      } else {
        const t = mainType(schema);
        const placeholder = t === "array" ? "[ ]" : "{ }";
        control = h("textarea", { ...common, rows: 3, class: "json-input", spellcheck: "false", placeholder }, dflt !== undefined ? prettyJSON(dflt) : "");
      }
  }
  const labelEl = h(kind === "multi" ? "span" : "label", { for: kind === "multi" ? undefined : id, id: id + "-label", class: "field-label" },
    schema.title && schema.title !== label ? h("span", { class: "field-title" }, schema.title, " ") : null, h("code", null, label), isRequired ? h("span", { class: "required", title: "required" }, " *") : null, h("span", { class: "type" }, " " + (kind.startsWith("list:") ? `${kind.slice(5)}[]` : kind === "enum" || kind === "multi" ? kind : mainType(schema) || "any")));
  if (kind === "boolean") {
    return h("div", { class: "field checkbox-field", dataset: { field: name } }, h("div", { class: "checkbox-row" }, control, labelEl), help);
  }
  return h("div", { class: "field", dataset: { field: name } }, labelEl, control, help);
}

// collect reads the form back into tool_inputs. Empty optional fields are
// left out so the server applies its defaults. It returns {inputs, errors}
// where errors maps a property to a message for input that cannot be read
// (bad JSON, a missing required field); range checks are left to the server,
// whose 422 names the field.
export function collect(form, schema, { prefix = "field-" } = {}) {
  const s = schema && typeof schema === "object" ? schema : {};
  const props = s.properties && typeof s.properties === "object" ? s.properties : {};
  const required = new Set(Array.isArray(s.required) ? s.required : []);
  const inputs = {};
  const errors = {};
  const raw = form.querySelector('[name="__raw__"]');
  if (raw) {
    const text = raw.value.trim();
    if (!text) return { inputs: {}, errors };
    try {
      const v = JSON.parse(text);
      if (!v || typeof v !== "object" || Array.isArray(v)) errors.__raw__ = "must be a JSON object";
      return { inputs: v, errors };
    } catch (e) {
      errors.__raw__ = "invalid JSON: " + e.message;
      return { inputs: {}, errors };
    }
  }
  for (const [name, ps] of Object.entries(props)) {
    const el = form.querySelector(`#${CSS.escape(fieldID(name, prefix))}`);
    if (!el) continue;
    const kind = el.dataset.kind;
    const req = required.has(name);
    if (kind === "boolean") {
      if (el.checked || req || (ps && ps.default !== undefined)) inputs[name] = el.checked;
      continue;
    }
    if (kind === "multi") {
      const values = enumOf(ps.items);
      const picked = [...el.querySelectorAll("input[type=checkbox]:checked")].map((c) => values[Number(c.value)]);
      if (picked.length || req) inputs[name] = picked;
      continue;
    }
    const text = el.value.trim();
    if (text === "") {
      if (req) errors[name] = "required";
      continue;
    }
    switch (kind) {
      case "enum":
        inputs[name] = enumOf(ps)[Number(text)];
        break;
      case "integer":
      case "number": {
        const n = Number(text);
        if (!Number.isFinite(n)) errors[name] = "must be a number";
        else inputs[name] = n;
        break;
      }
      case "string":
      case "date":
      case "email":
      case "url":
        inputs[name] = el.value;
        break;
      default:
        if (kind.startsWith("list:")) {
          const items = text.split(",").map((x) => x.trim()).filter((x) => x !== "");
          if (kind === "list:string") inputs[name] = items;
          else {
            const nums = items.map(Number);
            if (nums.some((n) => !Number.isFinite(n))) errors[name] = "must be numbers separated by commas";
            else inputs[name] = nums;
          }
        } else {
          try {
            inputs[name] = JSON.parse(text);
          } catch (e) {
            // A bare word for a free-form field is most likely a string.
            if (mainType(ps) === "" && !/^[[{"]/.test(text)) inputs[name] = text;
            else errors[name] = "invalid JSON: " + e.message;
          }
        }
    }
  }
  return { inputs, errors };
}

// showFormError flags the controls named in a server error message (422)
// or in local errors, and shows the message in the form's .form-error box
// (#tool-form-error in the tool panel).
export function showFormError(form, message, fieldErrors = {}) {
  const box = form.querySelector(".form-error");
  for (const el of form.querySelectorAll("[aria-invalid]")) el.removeAttribute("aria-invalid");
  for (const el of form.querySelectorAll(".field.invalid")) el.classList.remove("invalid");
  if (!message && !Object.keys(fieldErrors).length) {
    if (box) {
      box.hidden = true;
      box.textContent = "";
    }
    return;
  }
  const names = new Set(Object.keys(fieldErrors));
  if (message) {
    for (const fieldEl of form.querySelectorAll(".field[data-field]")) {
      const name = fieldEl.dataset.field;
      const re = new RegExp(`(^|[^\\w])(/|')?${name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}('|\\b)`);
      if (re.test(message)) names.add(name);
    }
  }
  let first = null;
  for (const name of names) {
    const fieldEl = form.querySelector(`.field[data-field="${CSS.escape(name)}"]`);
    if (!fieldEl) continue;
    fieldEl.classList.add("invalid");
    const control = fieldEl.querySelector("input, select, textarea");
    fieldEl.querySelector(".choices")?.setAttribute("aria-invalid", "true");
    if (control) {
      control.setAttribute("aria-invalid", "true");
      first = first || control;
    }
  }
  if (box) {
    const local = Object.entries(fieldErrors).map(([k, v]) => `${k === "__raw__" ? "tool_inputs" : k}: ${v}`);
    box.textContent = [message, ...local].filter(Boolean).join("; ");
    box.hidden = false;
  }
  if (first) first.focus({ preventScroll: true });
}
