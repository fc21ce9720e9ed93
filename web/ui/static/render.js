// render.js: small DOM helpers and the renderers shared by the chat and the
// tool panel: tables of objects, JSON, MCP tool results. Everything is built
// as DOM nodes with text nodes for text; nothing here parses HTML (Markdown
// is markdown.js).
import { icon } from "./icons.js";
import { safeHref } from "./markdown.js";

// h builds an element: h("div", {class: "x", dataset: {type: "t"}}, child, "text").
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") el.className = v;
      else if (k === "dataset") Object.assign(el.dataset, v);
      else if (k === "text") el.textContent = v;
      else if (/^on/i.test(k)) {
        // Handlers are functions; an "on..." attribute would be script.
        if (typeof v !== "function") throw new Error(`h: ${k} must be a function`);
        el.addEventListener(k.slice(2), v);
      } else if (/^(href|action|formaction|xlink:href)$/i.test(k)) {
        // A link is followed only to the web, mail or this site.
        const href = safeHref(String(v));
        if (href) el.setAttribute(k, href);
      } else if (/^src$/i.test(k)) {
        // Media from results come inline as data: URLs, which an img,
        // audio or video element shows and never runs.
        const src = String(v);
        if ((/^data:/i.test(src) && /^(img|audio|video)$/i.test(tag)) || safeHref(src)) el.setAttribute(k, src);
      } else if (v === true) el.setAttribute(k, "");
      else el.setAttribute(k, String(v));
    }
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

export function compactJSON(v) {
  try {
    return JSON.stringify(v);
  } catch {
    return String(v);
  }
}

export function prettyJSON(v) {
  try {
    return JSON.stringify(v, null, 2);
  } catch {
    return String(v);
  }
}

export function jsonBlock(v, cls = "json") {
  return h("pre", { class: cls }, h("code", null, prettyJSON(v)));
}

// isScalar reports whether v is a string, number or boolean.
function isScalar(v) {
  return typeof v === "string" || typeof v === "number" || typeof v === "boolean";
}

// MAX_CHIPS is how many items of a list one cell shows as chips.
const MAX_CHIPS = 20;

function cell(v) {
  if (v === null || v === undefined) return h("td", { class: "null" }, "—");
  if (Array.isArray(v) && v.every(isScalar)) {
    // A list of words (tags): chips, each whole.
    if (!v.length) return h("td", { class: "null" }, "—");
    const more = v.length - MAX_CHIPS;
    return h("td", { class: "list" }, v.slice(0, MAX_CHIPS).map((x) => h("span", { class: "tag" }, String(x))),
      more > 0 ? h("span", { class: "muted small" }, ` +${more}`) : null);
  }
  if (typeof v === "object") {
    const s = compactJSON(v);
    return h("td", { class: "nested", title: s.length > 120 ? prettyJSON(v) : undefined }, h("code", null, s.length > 300 ? s.slice(0, 300) + "…" : s));
  }
  if (typeof v === "boolean") return h("td", { class: "bool" }, v ? "true" : "false");
  if (typeof v === "number") return h("td", { class: "num" }, String(v));
  return h("td", null, String(v));
}

const MAX_ROWS = 200;

// REF is the key of a record's reference id: what a model cites it by. It
// is no column for a person; a row keeps it as data-ref.
const REF = "_REF_ID";

// table renders an array of objects: the columns are the union of their keys
// in first-seen order, less _REF_ID, which each row keeps as data-ref.
export function table(objects) {
  const rows = Array.isArray(objects) ? objects : [];
  const cols = [];
  const seen = new Set();
  for (const o of rows) {
    if (o && typeof o === "object" && !Array.isArray(o)) {
      for (const k of Object.keys(o)) if (k !== REF && !seen.has(k)) seen.add(k), cols.push(k);
    } else if (!seen.has("value")) {
      seen.add("value");
      cols.push("value");
    }
  }
  const head = h("tr", null, cols.map((c) => h("th", { scope: "col" }, c)));
  const body = rows.slice(0, MAX_ROWS).map((o) => {
    const isObj = o && typeof o === "object" && !Array.isArray(o);
    const ref = isObj && isScalar(o[REF]) ? String(o[REF]) : undefined;
    return h("tr", { dataset: ref === undefined ? undefined : { ref } }, cols.map((c) => cell(isObj ? o[c] : c === "value" ? o : undefined)));
  });
  // The wrap scrolls; a keyboard can scroll it only if it takes the focus.
  const wrap = h("div", { class: "table-wrap", tabindex: "0", role: "region", "aria-label": `Table of ${rows.length} row${rows.length === 1 ? "" : "s"}` },
    h("table", { class: "data" }, h("thead", null, head), h("tbody", null, body)));
  if (rows.length > MAX_ROWS) wrap.append(h("div", { class: "muted small" }, `${rows.length - MAX_ROWS} more rows not shown`));
  return wrap;
}

// inputSchemaOf returns a listed tool's input schema, whichever key the
// listing used.
export function inputSchemaOf(t) {
  return t.inputs || t.inputSchema || t.input_schema || {};
}

// isToolList reports whether objs are the tools of a gateway's list: each
// has a name and an input schema.
export function isToolList(objs) {
  return Array.isArray(objs) && objs.length > 0 &&
    objs.every((o) => o && typeof o.name === "string" && ("inputs" in o || "inputSchema" in o || "input_schema" in o));
}

// toolCard renders one listed tool: its name, description, parameters
// (required ones starred) and its schemas folded away. action is an optional
// element beside the name, such as the tool panel's Run button.
export function toolCard(t, action) {
  const inputs = inputSchemaOf(t);
  const output = t.output_schema || t.outputSchema;
  const props = inputs && inputs.properties ? Object.keys(inputs.properties) : [];
  const req = new Set(Array.isArray(inputs.required) ? inputs.required : []);
  return h("li", { class: "tool-item", dataset: { tool: t.name } },
    h("div", { class: "tool-head" }, h("code", { class: "tool-name" }, t.name), action),
    t.description ? h("div", { class: "desc" }, t.description) : null,
    props.length ? h("div", { class: "params" }, props.map((p) => h("span", { class: "param" + (req.has(p) ? " req" : "") }, p))) : null,
    h("details", { class: "schema" }, h("summary", null, "Input schema"), jsonBlock(inputs)),
    output ? h("details", { class: "schema" }, h("summary", null, "Output schema"), jsonBlock(output)) : null);
}

function isArrayOfObjects(v) {
  return Array.isArray(v) && v.length > 0 && v.every((o) => o && typeof o === "object" && !Array.isArray(o));
}

// structured renders structured content: a table when it is (or holds) a
// list of objects, pretty JSON otherwise.
export function structured(v) {
  if (isArrayOfObjects(v)) return table(v);
  if (v && typeof v === "object" && !Array.isArray(v)) {
    const keys = Object.keys(v);
    const listKey = keys.find((k) => isArrayOfObjects(v[k]));
    if (listKey) {
      const rest = {};
      for (const k of keys) if (k !== listKey) rest[k] = v[k];
      return h("div", { class: "structured" },
        h("div", { class: "muted small" }, listKey),
        table(v[listKey]),
        Object.keys(rest).length ? jsonBlock(rest) : null);
    }
    if (keys.length && keys.every((k) => v[k] === null || typeof v[k] !== "object")) {
      return table([v]);
    }
  }
  return jsonBlock(v);
}

function textContent(text) {
  const t = String(text ?? "");
  const trimmed = t.trim();
  if ((trimmed.startsWith("{") && trimmed.endsWith("}")) || (trimmed.startsWith("[") && trimmed.endsWith("]"))) {
    try {
      return structured(JSON.parse(trimmed));
    } catch {
      // Not JSON after all: show as text.
    }
  }
  return h("pre", { class: "text-content" }, t);
}

// mediaSrc is a data: URL for an item's base64 data, or "" unless its MIME
// type is one of kind ("image", "audio"): a server cannot pass off other
// data as media.
function mediaSrc(item, kind) {
  const mime = String(item.mimeType || item.mime_type || "").toLowerCase();
  const data = String(item.data || item.blob || "");
  if (!new RegExp(`^${kind}/[a-z0-9.+-]+$`).test(mime) || !/^[A-Za-z0-9+/=\s]*$/.test(data)) return "";
  return `data:${mime};base64,${data.replace(/\s+/g, "")}`;
}

// base64Bytes is how many bytes base64 text decodes to.
function base64Bytes(b64) {
  const s = String(b64 || "").replace(/\s+/g, "");
  return Math.max(0, Math.floor((s.length * 3) / 4) - (s.endsWith("==") ? 2 : s.endsWith("=") ? 1 : 0));
}

// formatBytes shows a size as people read it: "812 B", "3.4 KiB".
export function formatBytes(n) {
  if (!(n >= 0)) return "";
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

// blobLine shows binary data as its type and size, with a link that saves
// it as a file. The download is an application/octet-stream Blob: the
// browser saves it and never shows it as a page of this site.
function blobLine(item, name) {
  const mime = item.mimeType || item.mime_type || "binary";
  const data = item.data || item.blob || "";
  // A cut item gives the size of its base64 text.
  const size = data ? base64Bytes(data) : Math.floor(((Number(item.size) || 0) * 3) / 4);
  const line = h("div", { class: "blob-line muted small", dataset: { mime: String(mime), bytes: String(size) } },
    icon("file"), " ", String(mime), " · ", formatBytes(size), data ? "" : " (too large to show)");
  if (data && /^[A-Za-z0-9+/=\s]*$/.test(data)) {
    const a = h("a", { class: "download", download: fileName(name) }, "Download");
    a.addEventListener("click", (ev) => {
      // The Blob is made at the click and let go right after.
      ev.preventDefault();
      let bytes;
      try {
        bytes = Uint8Array.from(atob(data.replace(/\s+/g, "")), (c) => c.charCodeAt(0));
      } catch {
        return;
      }
      const url = URL.createObjectURL(new Blob([bytes], { type: "application/octet-stream" }));
      const save = document.createElement("a");
      save.href = url;
      save.download = fileName(name);
      save.click();
      setTimeout(() => URL.revokeObjectURL(url), 0);
    });
    a.href = "#";
    line.append(" · ", a);
  }
  return line;
}

// fileName is a safe file name for a download from uri: its last path
// segment, letters, digits and .-_ only.
function fileName(uri) {
  const last = String(uri || "").split(/[/\\?#]/).filter(Boolean).pop() || "resource";
  return last.replace(/[^A-Za-z0-9._-]/g, "_").slice(0, 80) || "resource";
}

// media is an img or audio element for an item of that kind, or its
// size line when its type or data is not one the element takes.
function media(item, kind, label) {
  const src = mediaSrc(item, kind);
  if (!src) return blobLine(item, label);
  return kind === "image"
    ? h("img", { class: "content-image", src, alt: item.alt || label || "image result" })
    : h("audio", { controls: true, src, "aria-label": label || "audio result" });
}

// resourceContent renders a resource's contents, as the gateway sends
// them ({uri, mime_type, text | data}) or as MCP nests them
// ({resource: {uri, mimeType, text | blob}}).
function resourceContent(item) {
  const r = item.resource && typeof item.resource === "object" ? item.resource : item;
  const uri = r.uri || "";
  const mime = r.mimeType || r.mime_type || "";
  const box = h("div", { class: "resource", dataset: { uri, mime } },
    h("div", { class: "muted small" }, "resource ", h("code", null, uri), mime ? ` · ${mime}` : ""));
  if (typeof r.text === "string") {
    box.append(textContent(r.text));
    if (r.truncated || item.truncated) box.append(h("div", { class: "muted small" }, "(cut: the resource is longer than the output cap)"));
  } else if (/^image\//i.test(mime) && (r.data || r.blob)) box.append(media(r, "image", uri));
  else box.append(blobLine(r, uri));
  return box;
}

// contentItem renders one MCP content item (text, image, audio, resource,
// resource_link); anything unknown becomes JSON.
export function contentItem(item) {
  if (item === null || typeof item !== "object") return textContent(item);
  switch (item.type) {
    case "text":
      return textContent(item.text);
    case "image":
      return media(item, "image", "image result");
    case "audio":
      return media(item, "audio", "audio result");
    case "resource":
      return resourceContent(item);
    case "resource_link":
      return h("div", { class: "resource" }, icon("link"), " ", h("code", null, item.uri || ""), item.name ? " " + item.name : "", item.description ? h("div", { class: "muted small" }, item.description) : null);
    default:
      return jsonBlock(item);
  }
}

// toolResult renders {is_error, content, structured} from an execute call.
export function toolResult(result) {
  const box = h("div", { class: "tool-output" + (result && result.is_error ? " is-error" : "") });
  if (!result || typeof result !== "object") {
    box.append(jsonBlock(result));
    return box;
  }
  if (result.is_error) box.append(h("div", { class: "note error" }, "The tool reported an error"));
  const content = Array.isArray(result.content) ? result.content : [];
  const hasStructured = result.structured !== undefined && result.structured !== null;
  for (const item of content) {
    // Servers often repeat structured content as a JSON text item: skip it.
    if (hasStructured && item && item.type === "text" && sameJSON(item.text, result.structured)) continue;
    box.append(contentItem(item));
  }
  if (hasStructured) box.append(h("div", { class: "muted small" }, "structured"), structured(result.structured));
  if (!content.length && !hasStructured) box.append(h("div", { class: "muted" }, "(empty result)"));
  return box;
}

function sameJSON(text, value) {
  try {
    return compactJSON(JSON.parse(text)) === compactJSON(value);
  } catch {
    return false;
  }
}

// formatDuration shows a duration in milliseconds as people read it: "8 ms",
// "1.4 s", "2 min 05 s". minSeconds, when given, shows shorter durations in
// seconds too (a running clock that should not jump between units).
export function formatDuration(ms, minSeconds) {
  if (!(ms >= 0)) return "";
  if (minSeconds === undefined && ms < 1) return "<1 ms";
  if (minSeconds === undefined && ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  const m = Math.floor(s / 60);
  return `${m} min ${String(Math.floor(s - m * 60)).padStart(2, "0")} s`;
}

export function relativeTime(iso) {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return "";
  const s = Math.round((Date.now() - t) / 1000);
  if (s < 45) return "just now";
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  if (s < 86400 * 7) return `${Math.round(s / 86400)} d ago`;
  return new Date(t).toLocaleDateString();
}
