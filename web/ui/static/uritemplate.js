// uritemplate.js: RFC 6570 URI templates, as MCP resource templates use
// them. templateVars lists a template's variables; expandTemplate fills
// them in, percent-encoding each value as its operator wants. Values are
// strings (a form's fields); lists and maps are not supported.

// OPS are the expression operators: the text before the first value, the
// separator between values, whether values are named (;x=1), what an
// empty named value shows, and whether reserved characters pass unencoded.
const OPS = {
  "": { first: "", sep: ",", named: false, ifemp: "", reserved: false },
  "+": { first: "", sep: ",", named: false, ifemp: "", reserved: true },
  "#": { first: "#", sep: ",", named: false, ifemp: "", reserved: true },
  ".": { first: ".", sep: ".", named: false, ifemp: "", reserved: false },
  "/": { first: "/", sep: "/", named: false, ifemp: "", reserved: false },
  ";": { first: ";", sep: ";", named: true, ifemp: "", reserved: false },
  "?": { first: "?", sep: "&", named: true, ifemp: "=", reserved: false },
  "&": { first: "&", sep: "&", named: true, ifemp: "=", reserved: false },
};

const EXPR = /\{([^{}]*)\}/g;

// varspecs parses an expression's body ("?x,y:3,z*") into its operator
// and variables; null when it is not a valid expression.
function varspecs(body) {
  const op = Object.hasOwn(OPS, body[0]) && body[0] !== "" ? body[0] : "";
  const list = (op ? body.slice(1) : body).split(",");
  const out = [];
  for (const spec of list) {
    const m = spec.match(/^((?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})(?:\.?(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2}))*)(?::([1-9][0-9]{0,3})|(\*))?$/);
    if (!m) return null;
    out.push({ name: m[1], prefix: m[2] ? Number(m[2]) : 0 });
  }
  return { op: OPS[op], vars: out };
}

// templateVars returns the variable names of template, each once, in the
// order they first appear.
export function templateVars(template) {
  const names = [];
  for (const m of String(template ?? "").matchAll(EXPR)) {
    const e = varspecs(m[1]);
    if (!e) continue;
    for (const v of e.vars) if (!names.includes(v.name)) names.push(v.name);
  }
  return names;
}

// encode percent-encodes s: everything but the unreserved characters, or
// with reserved also the reserved ones and existing %XX triplets kept.
function encode(s, reserved) {
  let out = "";
  for (const ch of s) {
    if (/[A-Za-z0-9\-._~]/.test(ch) || (reserved && /[:/?#[\]@!$&'()*+,;=]/.test(ch))) out += ch;
    else out += encodeURIComponent(ch).replace(/[!'()*]/g, (c) => "%" + c.charCodeAt(0).toString(16).toUpperCase());
  }
  if (reserved) out = out.replace(/%25([0-9A-Fa-f]{2})/g, "%$1");
  return out;
}

// expandTemplate fills template's variables from values (name → string).
// An undefined variable is left out, as RFC 6570 says; an empty one is
// kept as empty.
export function expandTemplate(template, values) {
  return String(template ?? "").replace(EXPR, (whole, body) => {
    const e = varspecs(body);
    if (!e) return whole;
    const parts = [];
    for (const v of e.vars) {
      const raw = values && Object.hasOwn(values, v.name) ? values[v.name] : undefined;
      if (raw === undefined || raw === null) continue;
      let s = String(raw);
      if (v.prefix) s = [...s].slice(0, v.prefix).join("");
      const enc = encode(s, e.op.reserved);
      if (e.op.named) parts.push(v.name + (s === "" ? e.op.ifemp : "=" + enc));
      else parts.push(enc);
    }
    return parts.length ? e.op.first + parts.join(e.op.sep) : "";
  });
}
