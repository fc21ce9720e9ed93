// pins.js: the tools of a server whose definitions are not the ones
// approved (pinned), in the gateway panel: for each, what changed, the
// approved and the current text of its description and a line diff of its
// schemas, with an Approve button (POST /api/servers/<name>/pins, admin
// only on a keyed service). "pin": "block" holds such a tool back until it
// is approved; "warn" lets it through and only shows it.
//
// Selectors for tests: #pin-changes (hidden when nothing changed;
// data-held = how many are held); one .pin-change[data-tool][data-change
// = "changed" | "new"][data-held = "true" | "false"] per tool, its
// .pin-desc-old and .pin-desc-new (the approved and the current
// description), .pin-schema-diff (lines .diff-del, .diff-ins), and
// button.approve; #pin-approve-all; #pin-status (role=status) says what
// an approval did, data-ok = "true" | "false"; #pin-differs (present only
// then) names the tools the server gave different users in different
// definitions (one li[data-tool] each). pinBadge is the tree's and the
// panel's badge: .pin-badge[data-pin = "held" | "warn"].
import { apiJSON } from "./api.js";
import { h } from "./render.js";
import { icon } from "./icons.js";

// pinBadge returns the badge of a server with changed tools, or null.
export function pinBadge(s) {
  const changes = s && Array.isArray(s.tool_changes) ? s.tool_changes : [];
  if (!changes.length) return null;
  const held = changes.filter((c) => c.held).length;
  const kind = held ? "held" : "warn";
  const label = held ? `${held} held` : `${changes.length} changed`;
  const names = changes.map((c) => `${c.name} (${c.reason || c.change})`).join(", ");
  const title = held
    ? `Tools held back until approved: ${names}`
    : `Tools changed since they were approved, let through ("pin": "warn"): ${names}`;
  return h("span", { class: `badge pin-badge pin-${kind}`, dataset: { pin: kind }, title }, icon("warning"), " ", label);
}

// MAX_DIFF_CELLS bounds the work of one diff (tokens × tokens); a larger
// one shows the old text removed and the new added, whole.
const MAX_DIFF_CELLS = 4_000_000;

// diff returns the edit script from a to b (arrays of tokens) as
// [op, token] pairs, op " " kept, "-" removed, "+" added: a longest common
// subsequence, the common ends first.
export function diff(a, b) {
  let pre = 0;
  while (pre < a.length && pre < b.length && a[pre] === b[pre]) pre++;
  let suf = 0;
  while (suf < a.length - pre && suf < b.length - pre && a[a.length - 1 - suf] === b[b.length - 1 - suf]) suf++;
  const x = a.slice(pre, a.length - suf);
  const y = b.slice(pre, b.length - suf);
  const out = a.slice(0, pre).map((t) => [" ", t]);
  if (x.length * y.length > MAX_DIFF_CELLS) {
    out.push(...x.map((t) => ["-", t]), ...y.map((t) => ["+", t]));
  } else {
    // lcs[i][j] is the LCS length of x[i:] and y[j:].
    const lcs = Array.from({ length: x.length + 1 }, () => new Uint32Array(y.length + 1));
    for (let i = x.length - 1; i >= 0; i--) {
      for (let j = y.length - 1; j >= 0; j--) {
        lcs[i][j] = x[i] === y[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
      }
    }
    let i = 0;
    let j = 0;
    while (i < x.length || j < y.length) {
      if (i < x.length && j < y.length && x[i] === y[j]) {
        out.push([" ", x[i++]]);
        j++;
      } else if (j < y.length && (i === x.length || lcs[i][j + 1] >= lcs[i + 1][j])) out.push(["+", y[j++]]);
      else out.push(["-", x[i++]]);
    }
  }
  out.push(...a.slice(a.length - suf).map((t) => [" ", t]));
  return out;
}

// parseDef reads a pinned or listed definition (canonical JSON, which the
// service may have cut): the object, or null when it is not JSON.
function parseDef(text) {
  if (!text) return null;
  try {
    const v = JSON.parse(text);
    return v && typeof v === "object" ? v : null;
  } catch {
    return null;
  }
}

const SCHEMA_PARTS = [["inputSchema", "Input schema"], ["outputSchema", "Output schema"], ["annotations", "Annotations"]];

function pretty(v) {
  return v === undefined ? "" : JSON.stringify(v, null, 2);
}

// words splits text into words and the spaces between them, for a diff
// that marks the words that changed.
function words(text) {
  return String(text || "").split(/(\s+)/).filter((t) => t !== "");
}

// markedText shows one side of a word diff: the words only that side has
// are marked (del on the approved side, ins on the current one).
function markedText(ops, side) {
  const tag = side === "-" ? "del" : "ins";
  return ops.filter(([op]) => op === " " || op === side).map(([op, t]) => (op === " " ? t : h(tag, null, t)));
}

// lineDiff is a <pre> of the line diff of two texts.
function lineDiff(oldText, newText, label) {
  const a = oldText ? oldText.split("\n") : [];
  const b = newText ? newText.split("\n") : [];
  return h("pre", { class: "pin-schema-diff", "aria-label": label, tabindex: "0" }, diff(a, b).map(([op, line]) =>
    h(op === "-" ? "del" : op === "+" ? "ins" : "span", { class: op === "-" ? "diff-del" : op === "+" ? "diff-ins" : "diff-same" }, `${op} ${line}\n`)));
}

// differsNote says which tools the server gave different users in
// different definitions (each user's differing one is held back for that
// user), or is null when none.
function differsNote(tools) {
  if (!tools.length) return null;
  return h("div", { id: "pin-differs", class: "small", role: "note" },
    h("p", null, `The server gives different users different definitions of ${tools.length === 1 ? "this tool" : "these tools"}; a user whose definition is not the approved one has it held back:`),
    h("ul", null, tools.map((t) => h("li", { dataset: { tool: t } }, h("code", null, t)))));
}

export class PinView {
  // panel is the ToolPanel: its serverName() names the server, and
  // onServersChanged() is called after an approval.
  constructor(panel) {
    this.panel = panel;
    this.el = document.getElementById("pin-changes");
    this.key = "";
  }

  // update shows the changes of server s (GET /api/servers' entry), or
  // hides the view when there are none. It re-renders only when they
  // changed, so an Approve button keeps the keyboard.
  update(s) {
    // A changed tool (what a rug pull looks like) before a new one.
    const changes = (s && Array.isArray(s.tool_changes) ? s.tool_changes : [])
      .toSorted((a, b) => (a.change === "new") - (b.change === "new") || String(a.name).localeCompare(String(b.name)));
    const differs = s && Array.isArray(s.differs_by_user) ? s.differs_by_user : [];
    const key = JSON.stringify([s && s.name, changes, differs]);
    if (key === this.key) return;
    this.key = key;
    // The status of this server's last approval stays, also when its
    // answer comes after the new state: the same node moves along.
    const mine = s && s.name === this.approvedFor;
    const old = this.el.querySelector("#pin-status");
    const status = mine && old ? old : h("p", { id: "pin-status", class: "small", role: "status" });
    const differNote = differsNote(differs);
    if (!changes.length) {
      delete this.el.dataset.held;
      if (differNote || (mine && old && old.textContent)) {
        this.el.hidden = false;
        this.el.replaceChildren(...[h("h3", { id: "pin-changes-title" }, icon(differNote ? "warning" : "check"), " Tool changes"), differNote, status].filter(Boolean));
        return;
      }
      this.el.replaceChildren();
      this.el.hidden = true;
      return;
    }
    const held = changes.filter((c) => c.held);
    this.el.hidden = false;
    this.el.dataset.held = String(held.length);
    const intro = held.length
      ? `${held.length === 1 ? "One tool is" : held.length + " tools are"} held back: the server changed ${held.length === 1 ? "it" : "them"} since ${held.length === 1 ? "it was" : "they were"} approved. Neither the agent nor /mcp clients see ${held.length === 1 ? "it" : "them"} until a person approves.`
      : `The server changed ${changes.length === 1 ? "a tool" : "tools"} since ${changes.length === 1 ? "it was" : "they were"} approved; "pin": "warn" lets ${changes.length === 1 ? "it" : "them"} through. Approve to make this the definition held against.`;
    const all = changes.length > 1
      ? h("button", { type: "button", id: "pin-approve-all", class: "small-button", onclick: () => this.approve(changes.map((c) => c.name)) }, icon("check"), " Approve all")
      : null;
    this.el.replaceChildren(...[
      h("h3", { id: "pin-changes-title" }, icon("warning"), held.length ? " Tools waiting for approval" : " Tools changed since approval"),
      h("p", { class: "small" }, intro),
      differNote,
      ...changes.map((c) => this.change(c)),
      h("div", { class: "pin-actions" }, all, status)].filter(Boolean));
  }

  // change is one tool's card: what changed, the description's two
  // texts, the schemas' diff and its Approve button.
  change(c) {
    const oldDef = parseDef(c.old);
    const newDef = parseDef(c.new);
    const parts = [];
    const isNew = c.change === "new";
    const when = c.pinned_at ? ` · approved ${new Date(c.pinned_at).toLocaleString()}` : "";
    parts.push(h("div", { class: "pin-head" },
      h("code", { class: "pin-tool" }, c.name),
      h("span", { class: `badge pin-badge pin-${c.held ? "held" : "warn"}`, dataset: { pin: c.held ? "held" : "warn" } }, c.held ? "held" : "let through"),
      h("span", { class: "muted small" }, ` ${isNew ? "new tool" : c.reason || "changed"}${when}`)));
    if (isNew) {
      const d = newDef ? newDef.description || "" : c.new;
      parts.push(h("div", { class: "pin-desc" }, h("div", { class: "pin-label small" }, "Description"), h("p", { class: "pin-desc-new" }, h("ins", null, d || "(none)"))));
      if (newDef && newDef.inputSchema !== undefined) parts.push(h("div", { class: "pin-label small" }, "Input schema"), lineDiff("", pretty(newDef.inputSchema), `Input schema of ${c.name}`));
    } else if (!oldDef || !newDef) {
      // A definition the service cut is shown as text, line by line.
      parts.push(h("div", { class: "pin-label small" }, "Definition"), lineDiff(c.old || "", c.new || "", `Definition of ${c.name}`));
    } else {
      const od = String(oldDef.description || "");
      const nd = String(newDef.description || "");
      if (od !== nd) {
        const ops = diff(words(od), words(nd));
        parts.push(h("div", { class: "pin-desc" },
          h("div", { class: "pin-label small" }, "Description approved"),
          h("p", { class: "pin-desc-old" }, markedText(ops, "-")),
          h("div", { class: "pin-label small" }, "Description now"),
          h("p", { class: "pin-desc-new" }, markedText(ops, "+"))));
      }
      for (const [key, label] of SCHEMA_PARTS) {
        const o = pretty(oldDef[key]);
        const n = pretty(newDef[key]);
        if (o !== n) parts.push(h("div", { class: "pin-label small" }, label), lineDiff(o, n, `${label} of ${c.name}: approved and now`));
      }
    }
    parts.push(h("div", { class: "pin-card-actions" },
      h("button", { type: "button", class: "small-button approve", "aria-label": `Approve ${c.name}`, onclick: () => this.approve([c.name]) }, icon("check"), " Approve")));
    return h("article", { class: "pin-change", dataset: { tool: c.name, change: c.change, held: String(Boolean(c.held)) }, "aria-label": `${c.name}: ${isNew ? "new tool" : c.reason || "changed"}` }, parts);
  }

  // approve pins the current definitions of tools.
  async approve(tools) {
    const status = this.el.querySelector("#pin-status");
    this.approvedFor = this.panel.serverName();
    for (const b of this.el.querySelectorAll("button")) b.disabled = true;
    status.textContent = `Approving ${tools.join(", ")}…`;
    delete status.dataset.ok;
    const r = await apiJSON(`/api/servers/${encodeURIComponent(this.panel.serverName())}/pins`, { method: "POST", body: { action: "approve", tools } });
    for (const b of this.el.querySelectorAll("button")) b.disabled = false;
    if (!r.ok) {
      status.dataset.ok = "false";
      status.textContent = r.status === 403 ? `Approving needs an admin API key: ${r.error}` : `Not approved: ${r.error || "request failed (" + r.status + ")"}`;
      return;
    }
    const approved = r.data && Array.isArray(r.data.approved) ? r.data.approved : tools;
    status.dataset.ok = "true";
    status.textContent = `Approved ${approved.join(", ")}: the agent and /mcp clients get ${approved.length === 1 ? "it" : "them"} again.`;
    // The event stream brings the server's new state; the panel asks too,
    // for a page whose stream is down.
    this.panel.onServersChanged();
  }
}
