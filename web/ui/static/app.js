// app.js: the Elysia web UI for one conversation, served at
// /tree/<user_id>/<conversation_id>. Plain ES modules, no build step, no
// network access beyond this service.
//
// Stable selectors (for browser tests; keep them when restyling):
//   body[data-state]          "loading" → "idle" | "running" (while a query runs)
//   #tree                     the decision tree; every node is .node[data-id="<option id>"],
//                             gateways also [data-gateway="true"]; click
//                             .node[data-id=X] > .row .label to open a gateway or branch;
//                             nodes on the agent's path get .on-path, the last decision .current
//   #servers-status           one .server[data-server=<name>][data-state=<state>] per server
//   #tool-panel               the gateway panel (hidden until a gateway is clicked)
//   #list-tools               "List tools" button
//   #tool-list                one li[data-tool="<name>"] per tool, its Run button is button.run
//   #tool-form                generated form; each control has name="<property>" and
//                             id="field-<property>"; submit is #tool-form-submit;
//                             errors (422 text) in #tool-form-error
//   #tool-result              the execute result; data-state = running | ok | error | invalid
//   #query-input, #query-send the query box and its button (Enter sends, Shift+Enter newline)
//   #chat                     the event log; one element per event with data-type="<envelope type>"
//                             (the answer bubble is .answer[data-type="text"], the end marker
//                             [data-type="completed"]); the user's query is .user-query[data-type="query"]
//   #conversations            li[data-conversation="<id>"]; button.open navigates,
//                             button.delete deletes after a second click (button text "Delete?")
//   #new-conversation         new conversation (navigates to a random id)
//   #api-key, #api-key-save   the API-key dialog (#api-key-dialog) shown on a 401
//   #conversation-title       the conversation title
import { apiJSON, getKey, promptForKey, resetDismissed } from "./api.js";
import { h, relativeTime } from "./render.js";
import { TreeView } from "./tree.js";
import { ToolPanel } from "./toolpanel.js";
import { ChatView, Transport } from "./chat.js";

const POLL_MS = 4000;
const $ = (id) => document.getElementById(id);

function randomID(prefix = "") {
  const bytes = new Uint8Array(8);
  if (globalThis.crypto && crypto.getRandomValues) crypto.getRandomValues(bytes);
  else for (let i = 0; i < bytes.length; i++) bytes[i] = Math.floor(Math.random() * 256);
  return prefix + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

// route reads /tree/<user>/<conversation>; anything else gets a fresh
// conversation for the last user this browser used.
function route() {
  const m = location.pathname.match(/^\/tree\/([^/]+)\/([^/]+)\/?$/);
  if (m) return { user: decodeURIComponent(m[1]), conversation: decodeURIComponent(m[2]) };
  let user = "me";
  try {
    user = localStorage.getItem("elysia.user") || user;
  } catch {
    // No storage: keep the default.
  }
  const r = { user, conversation: randomID("c-") };
  history.replaceState(null, "", convPath(r.user, r.conversation));
  return r;
}

function convPath(user, conversation) {
  return `/tree/${encodeURIComponent(user)}/${encodeURIComponent(conversation)}`;
}

class App {
  constructor() {
    const { user, conversation } = route();
    this.user = user;
    this.conversation = conversation;
    try {
      localStorage.setItem("elysia.user", user);
    } catch {
      // No storage: nothing to remember.
    }
    this.base = `${encodeURIComponent(user)}/${encodeURIComponent(conversation)}`;
    this.running = null; // {queryID, transport, errorTimer, watchdog}
    this.title = "";

    this.treeView = new TreeView($("tree"), {
      onGateway: (id) => {
        // On narrow screens the sidebar would cover the panel.
        document.body.classList.remove("sidebar-open");
        this.toolPanel.open(id);
      },
    });
    this.toolPanel = new ToolPanel({ treeView: this.treeView, onServersChanged: () => this.pollServers() });
    this.chat = new ChatView($("chat"), {
      onTreeUpdate: (p, queryID) => this.treeView.highlight(p, queryID),
      onTitle: (t) => this.setTitle(t, true),
      onSuggestion: (s) => {
        $("query-input").value = s;
        $("query-input").focus();
      },
    });
    this.transport = new Transport({
      user, conversation,
      onEvent: (env) => this.onEvent(env),
      onState: (s) => this.setConnection(s),
      onDrop: () => this.onDrop(),
    });
    this.serversKey = "";
  }

  async start() {
    $("conversation-meta").textContent = `${this.user} · ${this.conversation}`;
    this.bindUI();
    document.body.dataset.state = "idle";
    // The tree GET creates the conversation, so it goes first.
    await this.pollTree();
    await Promise.all([this.pollServers(), this.loadHistory(), this.loadConversations()]);
    this.schedulePoll();
    $("query-input").focus();
  }

  bindUI() {
    const input = $("query-input");
    $("query-form").addEventListener("submit", (ev) => {
      ev.preventDefault();
      this.submit();
    });
    input.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
        ev.preventDefault();
        this.submit();
      }
    });
    input.addEventListener("input", () => {
      input.style.height = "auto";
      input.style.height = Math.min(input.scrollHeight, 240) + "px";
    });
    $("new-conversation").addEventListener("click", () => location.assign(convPath(this.user, randomID("c-"))));
    $("tree-refresh").addEventListener("click", () => {
      this.pollTree();
      this.pollServers();
    });
    $("api-key-button").addEventListener("click", async () => {
      resetDismissed();
      await promptForKey(getKey() ? "Replace the stored API key." : "Enter an API key for this server.");
    });
    window.addEventListener("elysia-key", () => this.afterNewKey());
    $("sidebar-toggle").addEventListener("click", () => {
      const open = document.body.classList.toggle("sidebar-open");
      $("sidebar-toggle").setAttribute("aria-expanded", String(open));
    });
    document.addEventListener("visibilitychange", () => {
      if (document.visibilityState === "visible") this.pollNow();
    });
    window.addEventListener("focus", () => this.pollNow());
    window.addEventListener("pagehide", () => this.transport.close());
  }

  afterNewKey() {
    this.transport.resetWS();
    this.serversKey = "";
    this.pollServers();
    this.loadConversations();
  }

  setConnection(s) {
    const el = $("connection");
    el.dataset.transport = s;
    el.textContent = { ws: "live", sse: "streaming", connecting: "connecting…", reconnecting: "reconnecting…", offline: "idle" }[s] || s;
    el.title = { ws: "Connected over WebSocket", sse: "Streaming over server-sent events" }[s] || "";
  }

  setTitle(title, live) {
    this.title = title || "";
    $("conversation-title").textContent = this.title || "New conversation";
    document.title = this.title ? `${this.title} · Elysia` : "Elysia";
    if (live) this.loadConversations();
  }

  // ---- polling: the tree and the servers, re-rendered only on change ----

  schedulePoll() {
    clearTimeout(this.pollTimer);
    this.pollTimer = setTimeout(async () => {
      if (document.visibilityState !== "hidden") await Promise.all([this.pollTree(), this.pollServers()]);
      this.schedulePoll();
    }, POLL_MS);
  }

  pollNow() {
    const now = Date.now();
    if (now - (this.lastPollNow || 0) < 1000) return;
    this.lastPollNow = now;
    Promise.all([this.pollTree(), this.pollServers()]).finally(() => this.schedulePoll());
  }

  async pollTree() {
    const r = await apiJSON(`/tree/${this.base}`, { interactive: !this.treeLoaded });
    if (r.data && r.data.tree) {
      this.treeLoaded = true;
      if (this.treeView.setTree(r.data.tree)) this.toolPanel.refreshInfo();
      return;
    }
    this.treeView.setError(r.error || "could not load the tree");
  }

  async pollServers() {
    const r = await apiJSON("/api/servers", { interactive: false });
    const el = $("servers-status");
    if (!r.data || !Array.isArray(r.data.servers)) {
      if (r.status === 401 || r.status === 403) el.replaceChildren(h("div", { class: "note error small" }, "Server status needs an API key."));
      else if (!this.serversKey) el.replaceChildren(h("div", { class: "muted small" }, r.error || "Server status unavailable."));
      return;
    }
    const key = JSON.stringify([r.data.servers, r.data.config_error]);
    if (key === this.serversKey) return;
    this.serversKey = key;
    this.treeView.setServers(r.data.servers);
    this.toolPanel.refreshInfo();
    const items = r.data.servers.map((s) => {
      const state = s.circuit && s.circuit.state === "open" ? "failed" : s.state || "unknown";
      return h("button", {
        type: "button", class: `server state-${state}`, dataset: { server: s.name, state: s.state || "unknown" },
        title: [s.transport, s.state, s.tool_count !== undefined ? `${s.tool_count} tools` : "", s.last_error].filter(Boolean).join(" · "),
        onclick: () => s.tool_name && this.toolPanel.open(s.tool_name),
      }, h("span", { class: "dot", "aria-hidden": "true" }), s.name, h("span", { class: "visually-hidden" }, ` ${s.state}`));
    });
    const children = [];
    if (r.data.config_error) children.push(h("div", { class: "note error small", title: r.data.config_file || "" }, `Config error (last good config in force): ${r.data.config_error}`));
    if (items.length) children.push(h("div", { class: "server-chips" }, items));
    else children.push(h("div", { class: "muted small" }, "No MCP servers configured."));
    el.replaceChildren(...children);
  }

  // ---- conversations ----

  async loadConversations() {
    const r = await apiJSON(`/conversations/${encodeURIComponent(this.user)}`, { interactive: false });
    const list = $("conversations");
    const convs = r.data && Array.isArray(r.data.conversations) ? r.data.conversations : null;
    if (!convs) {
      list.replaceChildren(h("li", { class: "muted small" }, r.error || "No conversations."));
      return;
    }
    const sorted = [...convs].sort((a, b) => String(b.updated_at || "").localeCompare(String(a.updated_at || "")));
    if (!sorted.some((c) => c.conversation_id === this.conversation)) {
      sorted.unshift({ conversation_id: this.conversation, title: this.title, updated_at: "" });
    }
    list.replaceChildren(...sorted.map((c) => {
      const current = c.conversation_id === this.conversation;
      const title = (current && this.title) || c.title || c.conversation_id;
      const del = h("button", { type: "button", class: "delete icon-button", "aria-label": `Delete conversation ${title}`, title: "Delete" }, "🗑");
      del.addEventListener("click", () => this.deleteConversation(c.conversation_id, del));
      return h("li", { class: current ? "current" : "", dataset: { conversation: c.conversation_id } },
        h("button", {
          type: "button", class: "open", "aria-current": current ? "page" : undefined,
          onclick: () => {
            if (!current) location.assign(convPath(this.user, c.conversation_id));
          },
        }, h("span", { class: "conv-title" }, title), h("span", { class: "conv-time" }, relativeTime(c.updated_at))),
        del);
    }));
  }

  async deleteConversation(id, button) {
    if (button.dataset.confirm !== "true") {
      button.dataset.confirm = "true";
      button.textContent = "Delete?";
      button.classList.add("confirm");
      setTimeout(() => {
        if (!button.isConnected) return;
        button.dataset.confirm = "";
        button.textContent = "🗑";
        button.classList.remove("confirm");
      }, 4000);
      return;
    }
    const r = await apiJSON(`/conversations/${encodeURIComponent(this.user)}/${encodeURIComponent(id)}`, { method: "DELETE" });
    if (!r.ok && r.status !== 404) {
      this.chat.note(null, "error", `Could not delete the conversation: ${r.error}`);
      return;
    }
    if (id === this.conversation) location.assign(convPath(this.user, randomID("c-")));
    else this.loadConversations();
  }

  // loadHistory replays the saved event log so a reopened conversation
  // shows its past. A 404 means a new conversation.
  async loadHistory() {
    const r = await apiJSON(`/conversations/${this.base}`, { interactive: false });
    if (!r.data || r.status === 404) {
      this.setTitle("");
      return;
    }
    const d = r.data;
    const conv = d.conversation && typeof d.conversation === "object" ? d.conversation : d;
    this.setTitle(conv.title || d.title || "");
    const events = [d.events, conv.events, d.event_log, conv.event_log].find(Array.isArray) || [];
    const history = [conv.history, conv.conversation_history, d.history].find(Array.isArray) || [];
    const queries = [conv.queries, d.queries].find(Array.isArray) || [];
    const userTexts = history.filter((m) => m && m.role === "user").map((m) => contentText(m.content ?? m.text ?? m.query));
    const byID = new Map(queries.filter((q) => q && q.query_id).map((q) => [q.query_id, q.query ?? q.text ?? ""]));
    const order = [];
    for (const env of events) {
      if (env && env.query_id && !order.includes(env.query_id)) order.push(env.query_id);
    }
    if (events.length) {
      for (const env of events) {
        if (!env || !env.type) continue;
        const qid = env.query_id;
        if (qid) {
          const text = byID.get(qid) ?? (env.payload && env.payload.query) ?? userTexts[order.indexOf(qid)];
          if (text) this.chat.addQuery(text, qid);
        }
        this.chat.handle(env, { replay: true });
      }
    } else if (history.length) {
      // No event log: show the plain history.
      history.forEach((m, i) => {
        if (!m) return;
        const text = contentText(m.content ?? m.text);
        if (m.role === "user") this.chat.addQuery(text, `h${i}`);
        else this.chat.handle({ type: "text", id: `h${i}`, query_id: `h${i - 1}`, payload: { objects: [{ text }] } }, { replay: true });
      });
    }
  }

  // ---- queries ----

  async submit() {
    const input = $("query-input");
    const query = input.value.trim();
    if (!query || this.running) return;
    input.value = "";
    input.style.height = "auto";
    resetDismissed();
    const queryID = randomID("q-");
    this.running = { queryID, transport: "" };
    document.body.dataset.state = "running";
    $("query-send").disabled = true;
    this.treeView.clearHighlight();
    this.chat.addQuery(query, queryID, { live: true });
    this.armWatchdog();
    const used = await this.transport.send(query, queryID);
    if (!this.running || this.running.queryID !== queryID) return;
    this.running.transport = used;
    if (used === "sse") {
      // The stream ended; if "completed" never came, the log says what happened.
      await this.reconcile(queryID, false);
    }
  }

  onEvent(env) {
    if (!env || typeof env !== "object") return;
    if (env.conversation_id && env.conversation_id !== this.conversation) return;
    const run = this.running;
    if (run && !env.query_id) env.query_id = run.queryID;
    const isNew = this.chat.handle(env);
    if (!run || env.query_id !== run.queryID || !isNew) return;
    this.armWatchdog();
    clearTimeout(run.errorTimer);
    if (env.type === "completed") this.finish();
    else if (env.type === "error") {
      // A refused query (409) ends with "error" and no "completed"; a
      // failing run still sends "completed". Wait briefly to tell them apart.
      // A dropped stream is left to reconcile, which reads the saved log.
      if (!(env.payload && env.payload.dropped)) run.errorTimer = setTimeout(() => this.running === run && this.finish(), 1500);
    }
  }

  finish() {
    const run = this.running;
    if (!run) return;
    clearTimeout(run.errorTimer);
    clearTimeout(this.watchdog);
    clearTimeout(this.reconcileTimer);
    this.chat.endTurn(run.queryID);
    this.running = null;
    document.body.dataset.state = "idle";
    $("query-send").disabled = false;
    this.loadConversations();
    this.pollTree();
  }

  armWatchdog() {
    clearTimeout(this.watchdog);
    this.watchdog = setTimeout(() => {
      if (!this.running) return;
      this.chat.note(this.running.queryID, "warning", "No news from the server for five minutes; giving up on this query.");
      this.finish();
    }, 5 * 60 * 1000);
  }

  // onDrop handles a WebSocket that closed. Idle: reconnect on the next
  // query. Running: reconnect with back-off and fill the gap from the
  // conversation's event log.
  onDrop() {
    const run = this.running;
    if (!run || run.transport !== "ws") return;
    this.chat.note(run.queryID, "warning", "Connection lost; reconnecting…");
    this.setConnection("reconnecting");
    this.reconcile(run.queryID, true);
  }

  async reconcile(queryID, reconnect, attempt = 0) {
    if (!this.running || this.running.queryID !== queryID) return;
    if (reconnect) this.transport.connectWS().then((ok) => ok || this.setConnection("offline"));
    const r = await apiJSON(`/conversations/${this.base}`, { interactive: false });
    const d = r.data || {};
    const conv = d.conversation && typeof d.conversation === "object" ? d.conversation : d;
    const events = [d.events, conv.events, d.event_log, conv.event_log].find(Array.isArray) || [];
    for (const env of events) if (env && env.query_id === queryID) this.onEvent(env);
    if (!this.running || this.running.queryID !== queryID) return;
    if (attempt >= 30) {
      this.chat.note(queryID, "error", "The query did not finish.");
      this.finish();
      return;
    }
    const delay = Math.min(1000 * 2 ** Math.min(attempt, 3), 5000);
    this.reconcileTimer = setTimeout(() => this.reconcile(queryID, reconnect && !this.transport.ws, attempt + 1), delay);
  }
}

function contentText(c) {
  if (typeof c === "string") return c;
  if (Array.isArray(c)) return c.map(contentText).join("\n");
  if (c && typeof c === "object") return c.text ?? c.content ?? JSON.stringify(c);
  return c === undefined || c === null ? "" : String(c);
}

const app = new App();
app.start();
