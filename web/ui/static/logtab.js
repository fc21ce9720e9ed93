// logtab.js: the gateway panel's Logs tab: the server's last log
// messages, reloaded every LOGS_EVERY ms while the tab is open, "Live" is
// checked and the page is shown, and filtered by level.
//
// Selectors for tests: #server-logs li[data-level] (hidden below
// #logs-level), #logs-refresh, #logs-live, #logs-status.
import { h } from "./render.js";
import { Follower, getFeature } from "./panelkit.js";

// LEVELS are MCP's log levels, least severe first (RFC 5424's order).
const LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];

// LOGS_EVERY is how often an open Logs tab with "Live" checked reloads
// the log, in ms. Nothing polls while the tab is closed or the page hidden.
const LOGS_EVERY = 2000;

export class LogTab {
  // panel is the ToolPanel: its gateway, tab, featurePath and loaded tabs.
  constructor(panel) {
    this.panel = panel;
    this.list = document.getElementById("server-logs");
    this.status = document.getElementById("logs-status");
    this.level = document.getElementById("logs-level");
    this.live = document.getElementById("logs-live");
    this.key = "";
    this.follower = new Follower(LOGS_EVERY, () => {
      const p = this.panel;
      return p.tab === "logs" && !p.panel.hidden && p.gateway && this.live.checked && document.visibilityState !== "hidden";
    }, () => this.load());
    document.getElementById("logs-refresh").addEventListener("click", () => this.load());
    this.level.addEventListener("change", () => this.filter());
    this.live.addEventListener("change", () => this.follow());
    document.addEventListener("visibilitychange", () => this.follow());
  }

  // reset forgets the last gateway's log.
  reset() {
    this.list.replaceChildren();
    this.key = "";
    this.status.textContent = "";
  }

  async load() {
    const logs = await getFeature(this.panel, "logs", this.status, !this.list.childElementCount, Array.isArray);
    if (!logs) return;
    const status = logs.length ? `last ${logs.length} message${logs.length === 1 ? "" : "s"}, newest last` : "No log messages from this server yet.";
    if (this.status.textContent !== status) this.status.textContent = status;
    // Nothing new: leave the list (and the reader's place in it) alone.
    const key = `${logs.length}\u0000${JSON.stringify(logs.at(-1) ?? null)}`;
    if (key === this.key && this.list.childElementCount === logs.length) return;
    this.key = key;
    this.list.replaceChildren(...logs.map((e) => {
      const t = Date.parse(e.time);
      return h("li", { class: "log-line", dataset: { level: e.level || "" } },
        h("time", { datetime: e.time || undefined }, Number.isNaN(t) ? "" : new Date(t).toLocaleTimeString()),
        h("span", { class: "log-level" }, e.level || "?"),
        e.logger ? h("code", { class: "log-logger" }, e.logger) : null,
        h("span", { class: "log-data" }, typeof e.data === "string" ? e.data : JSON.stringify(e.data ?? "")));
    }));
    this.filter();
    [...this.list.children].filter((li) => !li.hidden).at(-1)?.scrollIntoView({ block: "nearest" });
  }

  // filter shows the lines at the chosen level or above.
  filter() {
    const min = LEVELS.indexOf(this.level.value);
    let shown = 0;
    for (const li of this.list.children) {
      const at = LEVELS.indexOf(li.dataset.level);
      li.hidden = at >= 0 && at < min;
      if (!li.hidden) shown++;
    }
    this.list.dataset.shown = String(shown);
  }

  // follow reloads the log every LOGS_EVERY ms while the Logs tab is open,
  // "Live" is checked and the page is shown; else it stops.
  follow() {
    this.follower.update();
  }
}
