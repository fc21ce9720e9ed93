// historytab.js: the gateway panel's History tab, a window into the wire
// to the server (GET /api/servers/<name>/history): the service's last
// requests to it and the server's to the service, each with its answer, when, how long it took and how
// big both were; the server's last notifications; and what its processes
// last wrote to stderr. Everything is masked by the service, and a user's
// key sees only what is nobody's or theirs. Newest first; a method filter
// applies to both lists; each message has a Copy button. Reloaded like
// the Logs tab while it is open, "Live" is checked and the page is shown.
//
// Selectors for tests: #history-requests li.history-item and
// #history-notifications li.history-item, each with data-method (hidden
// when #history-method filters it out) and .h-duration, .h-size, .h-user,
// .h-from (a request the server sent);
// their pre.h-message (data-part request|answer|notification) and
// button.copy-message; #history-stderr; #history-status; #history-refresh;
// #history-live.
import { h } from "./render.js";
import { icon } from "./icons.js";
import { Follower, getFeature } from "./panelkit.js";

// HISTORY_EVERY is how often an open History tab with "Live" checked
// reloads, in ms.
const HISTORY_EVERY = 2000;

// size writes n bytes for people: "340 B", "1.2 KB", "3.4 MB".
export function size(n) {
  if (!(n >= 0)) return "";
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

// duration writes ms for people: "0.4 ms", "36 ms", "2.1 s".
function duration(ms) {
  if (!(ms >= 0)) return "";
  if (ms < 10) return `${ms.toFixed(1)} ms`;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  return `${(ms / 1000).toFixed(1)} s`;
}

// pretty indents text when it is JSON; a cut message (not JSON any more)
// is shown as it came.
function pretty(text) {
  if (!text) return "";
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

// toolOf names the tool, prompt or resource a request is about, from its
// params: "create_todo" for a tools/call.
function toolOf(e) {
  try {
    const p = JSON.parse(e.message || "null");
    return (p && (p.name || p.uri)) || "";
  } catch {
    return "";
  }
}

// copyText puts text on the clipboard, through a hidden textarea where
// the Clipboard API is not allowed. It reports whether it worked.
async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const area = h("textarea", { class: "visually-hidden", readonly: true, "aria-hidden": "true" });
    area.value = text;
    document.body.append(area);
    area.select();
    let done = false;
    try {
      done = document.execCommand("copy");
    } catch {
      done = false;
    }
    area.remove();
    return done;
  }
}

// part is one message of an entry, with its Copy button.
function part(kind, label, text, bytes) {
  const shown = pretty(text);
  // The visible word is the start of the button's name ("Copy the
  // answer"), and says how the copy went.
  const said = h("span", null, "Copy");
  const button = h("button", { type: "button", class: "small-button copy-message", dataset: { part: kind } },
    said, h("span", { class: "visually-hidden" }, ` the ${label.toLowerCase()}`));
  button.addEventListener("click", async () => {
    const ok = await copyText(text);
    said.textContent = ok ? "Copied" : "Copy failed";
    button.dataset.copied = String(ok);
    setTimeout(() => {
      said.textContent = "Copy";
      delete button.dataset.copied;
    }, 1500);
  });
  // A long message scrolls: the keyboard can reach it (tabindex).
  return h("div", { class: "h-part" },
    h("div", { class: "h-part-head small" }, h("span", { class: "muted" }, `${label} · ${size(bytes)}`), button),
    h("pre", { class: "h-message", tabindex: "0", "aria-label": label, dataset: { part: kind } }, shown));
}

export class HistoryTab {
  // panel is the ToolPanel: its gateway, tab, featurePath and loaded tabs.
  constructor(panel) {
    this.panel = panel;
    this.requests = document.getElementById("history-requests");
    this.notes = document.getElementById("history-notifications");
    this.stderr = document.getElementById("history-stderr");
    this.status = document.getElementById("history-status");
    this.method = document.getElementById("history-method");
    this.live = document.getElementById("history-live");
    this.key = "";
    this.opened = new Set(); // the entries the user opened, kept across reloads
    this.follower = new Follower(HISTORY_EVERY, () => {
      const p = this.panel;
      return p.tab === "history" && !p.panel.hidden && p.gateway && this.live.checked && document.visibilityState !== "hidden";
    }, () => this.load());
    document.getElementById("history-refresh").addEventListener("click", () => this.load());
    this.method.addEventListener("change", () => this.filter());
    this.live.addEventListener("change", () => this.follow());
    document.addEventListener("visibilitychange", () => this.follow());
  }

  follow() {
    this.follower.update();
  }

  // reset forgets the last gateway's history.
  reset() {
    this.requests.replaceChildren();
    this.notes.replaceChildren();
    this.stderr.replaceChildren();
    this.method.replaceChildren(h("option", { value: "" }, "All methods"));
    this.opened.clear();
    this.key = "";
    this.status.textContent = "";
  }

  async load() {
    const hist = await getFeature(this.panel, "history", this.status, !this.requests.childElementCount, (v) => Array.isArray(v.requests));
    if (!hist) return;
    const notes = hist.notifications || [];
    const stderr = hist.stderr || [];
    const status = hist.requests.length || notes.length
      ? `${hist.requests.length} request${hist.requests.length === 1 ? "" : "s"}, ${notes.length} notification${notes.length === 1 ? "" : "s"}, newest first`
      : "Nothing sent to this server yet.";
    if (this.status.textContent !== status) this.status.textContent = status;
    // Nothing new: leave the lists (and what the reader opened) alone.
    const key = JSON.stringify([hist.requests.at(-1) ?? null, notes.at(-1) ?? null, hist.requests.length, notes.length, stderr]);
    if (key === this.key) return;
    this.key = key;
    this.requests.replaceChildren(...hist.requests.toReversed().map((e) => this.request(e)));
    this.notes.replaceChildren(...notes.toReversed().map((e) => this.notification(e)));
    this.stderr.replaceChildren(...stderr.map((t) => h("div", { class: "h-stderr" },
      h("div", { class: "muted small" }, ["stderr", t.user ? `of ${t.user}'s process` : "", t.copy ? `(copy ${t.copy})` : ""].filter(Boolean).join(" ")),
      h("pre", { class: "h-message", tabindex: "0", "aria-label": "stderr" }, (t.lines || []).join("\n")))));
    this.methods([...hist.requests, ...notes]);
    this.filter();
  }

  // methods offers the methods seen in the filter, keeping the choice.
  methods(entries) {
    const chosen = this.method.value;
    const names = [...new Set(entries.map((e) => e.method))].sort();
    if (chosen && !names.includes(chosen)) names.push(chosen);
    this.method.replaceChildren(h("option", { value: "" }, "All methods"), ...names.map((m) => h("option", { value: m }, m)));
    this.method.value = chosen;
  }

  // item is the <li> of one entry: a summary line, and its messages
  // when opened.
  item(e, summary, parts) {
    const id = `${e.time}\u0000${e.method}\u0000${e.id || ""}`;
    const t = Date.parse(e.time);
    const when = h("time", { datetime: e.time || undefined }, Number.isNaN(t) ? "" : new Date(t).toLocaleTimeString());
    const details = h("details", { open: this.opened.has(id) }, h("summary", null, when, ...summary), ...parts);
    details.addEventListener("toggle", () => {
      if (details.open) this.opened.add(id);
      else this.opened.delete(id);
    });
    return h("li", { class: "history-item", dataset: { method: e.method || "", state: e.error ? "error" : "ok" } }, details);
  }

  request(e) {
    const tool = toolOf(e);
    const summary = [
      e.from_server ? h("span", { class: "h-from chip", title: "The server asked; the service answered" }, "from the server") : null,
      h("code", { class: "h-method" }, e.method),
      tool ? h("span", { class: "h-tool" }, tool) : null,
      h("span", { class: "h-duration" }, duration(e.duration_ms)),
      h("span", { class: "h-size muted" }, `${size(e.bytes)} → ${e.answer || e.answer_bytes ? size(e.answer_bytes) : "no answer"}`),
      e.user ? h("span", { class: "h-user chip" }, e.user) : null,
      e.copy ? h("span", { class: "h-copy chip" }, `copy ${e.copy}`) : null,
      e.error ? h("span", { class: "h-error" }, icon("error"), "error") : null,
    ];
    const parts = [part("request", e.from_server ? "Server's request" : "Request", e.message, e.bytes)];
    if (e.answer) parts.push(part("answer", e.error ? "Error" : e.from_server ? "Our answer" : "Answer", e.answer, e.answer_bytes));
    else if (e.error) parts.push(h("div", { class: "note error small" }, e.error));
    return this.item(e, summary, parts);
  }

  notification(e) {
    const summary = [
      h("code", { class: "h-method" }, e.method),
      h("span", { class: "h-size muted" }, size(e.bytes)),
      e.user ? h("span", { class: "h-user chip" }, e.user) : null,
      e.copy ? h("span", { class: "h-copy chip" }, `copy ${e.copy}`) : null,
    ];
    return this.item(e, summary, [part("notification", "Notification", e.message, e.bytes)]);
  }

  // filter shows the entries of the chosen method, or all.
  filter() {
    const m = this.method.value;
    for (const list of [this.requests, this.notes]) {
      let shown = 0;
      for (const li of list.children) {
        li.hidden = m !== "" && li.dataset.method !== m;
        if (!li.hidden) shown++;
      }
      list.dataset.shown = String(shown);
    }
  }
}
