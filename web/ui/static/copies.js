// copies.js: the copies of a server with copies (mcp.json "copies"), as
// GET /api/servers reports them: a small table in the gateway panel with
// every copy, where it is, its state, its calls, and which one serves.
// (The tree's badge says "on copy 2" when a fallback copy serves.)
//
// Selectors for tests: table.copies-table, its caption (the policy and
// what serves), and tr[data-copy] rows with data-state, data-serving and
// data-down; .copy-where, .copy-state, .copy-calls, td.copy-serving.
import { h } from "./render.js";
import { plural } from "./panelkit.js";
import { stateLabel } from "./tree.js";

// copiesTable is the table of s's copies, or null for a server without.
export function copiesTable(s) {
  if (!s || !Array.isArray(s.copies) || !s.copies.length) return null;
  const when = (t) => {
    const at = Date.parse(t || "");
    return Number.isNaN(at) ? "" : ` since ${new Date(at).toLocaleTimeString()}`;
  };
  const rows = s.copies.map((c) => {
    const state = c.down ? `down${when(c.down_since)}` : stateLabel(c.state);
    const circuit = c.circuit && c.circuit.state && c.circuit.state !== "closed" ? ` · circuit ${c.circuit.state}` : "";
    return h("tr", { dataset: { copy: String(c.copy), state: c.state || "", serving: String(!!c.serving), down: String(!!c.down) }, title: c.last_error || undefined },
      h("th", { scope: "row" }, c.label || `copy ${c.copy}`,
        h("div", { class: "copy-where small" }, h("code", null, c.where || "?"), ` · ${c.transport || "?"}`)),
      h("td", null, h("span", { class: `badge copy-state state-${c.down ? "failed" : c.state || "unknown"}` }, state + circuit),
        h("div", { class: "copy-calls small muted" }, plural(c.calls || 0, "call") + (c.failures ? `, ${c.failures} failed` : ""))),
      h("td", { class: "copy-serving" }, c.serving ? "serving" : ""));
  });
  const policy = s.policy === "round_robin" ? "round robin" : s.policy || "priority";
  return h("div", { class: "table-wrap copies-wrap" },
    h("table", { class: "data copies-table" },
      h("caption", { class: "small" }, `Copies · ${policy} · ${s.serving ? `serving: ${s.serving}` : "none can serve now"}`),
      h("thead", null, h("tr", null, ...["Copy", "State", "Serving"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", null, ...rows)));
}
