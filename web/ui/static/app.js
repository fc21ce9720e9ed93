// app.js: the Elysia web UI for one conversation, served at
// /tree/<user_id>/<conversation_id>. Plain ES modules, no build step, no
// network access beyond this service.
//
// The page opens one event stream (live.js) and re-renders what it pushes:
// the servers' state, this conversation's tree and the conversation list.
// It sends no request while idle: no timer polls.
//
// Stable selectors (for browser tests; keep them when restyling):
//   body[data-state]          "loading" → "idle" | "running" (while a query runs)
//   body[data-live]           the event stream: "connecting" | "live" | "retrying" | "stopped"
//   #connection               the query status: data-state "idle" | "connecting" | "running" | "reconnecting",
//                             its text says the same ("idle" once a query has completed)
//   svg.icon                  every icon (inline SVG, no font needed); .node-icon holds a tree node's
//   .suggestion               the empty chat's suggestion chips: a click sends the query
//   #tree                     the decision tree; every node is .node[data-id="<option id>"],
//                             gateways also [data-gateway="true"]; click
//                             .node[data-id=X] > .row .label to open a gateway or branch;
//                             the rows are role=treeitem (one Tab stop; arrows, Home, End, Enter);
//                             nodes on the agent's path get .on-path, the last decision .current
//   #servers-status           one .server[data-server=<name>][data-state=<state>] per server
//   #tool-panel               the gateway panel (hidden until a gateway is clicked)
//   #list-tools               "List tools" button
//   #tool-list                one li[data-tool="<name>"] per tool, its Run button is button.run
//   #tool-form                generated form; each control has name="<property>" and
//                             id="field-<property>"; submit is #tool-form-submit;
//                             errors (422 text) in #tool-form-error
//   #tool-result              the execute result; data-state = running | ok | error | invalid
//   #query-input, #query-send the query box and its button (Enter sends, Shift+Enter newline);
//                             the panel's #prompt-to-chat puts a got prompt's text in it
//   #query-stop               shown while a query runs: stops it, as Esc does (the turn gets [data-type="stopped"],
//                             which a reopened conversation shows again from the run's saved end)
//   #chat .tool-progress      a tool call's progress: data-state "running" | "done" | "stopped" | "lost" |
//                             "ended" (a reopened turn with no saved end, marked [data-type="unfinished"]),
//                             data-tool, data-progress, data-total; its <progress> bar while running
//   #chat .elicitation        a server's question: data-state (elicit.js), data-mode "form" | "url";
//                             controls named after the schema's properties, buttons .accept
//                             .decline .cancel, the server's refusal in .form-error
//   #chat .status.sampling    a server had the model write a message
//   #tool-panel tabs          #tab-tools #tab-resources #tab-prompts #tab-logs (see toolpanel.js)
//   #chat                     the event log; one element per event with data-type="<envelope type>"
//                             (the answer bubble is .answer[data-type="text"], the end marker
//                             [data-type="completed"]); the user's query is .user-query[data-type="query"]
//   #conversations            li[data-conversation="<id>"]; button.open navigates,
//                             button.delete deletes after a second click (button text "Delete?")
//   #new-conversation         new conversation (navigates to a random id)
//   #api-key, #api-key-save   the API-key dialog (#api-key-dialog) shown on a 401
//   #conversation-title       the conversation title
//   #theme-select             the colour theme: "system" | "light" | "dark" (themeswitch.js)
//   #chat .done[data-ms]      a live turn's end: the query's real duration in ms
import { apiJSON, getKey, promptForKey, resetDismissed } from "./api.js";
import { h, relativeTime } from "./render.js";
import { TreeView, stateLabel } from "./tree.js";
import { ToolPanel } from "./toolpanel.js";
import { ChatView, Transport } from "./chat.js";
import { LiveEvents } from "./live.js";
import { fillIcons, icon } from "./icons.js";
import { SignIn } from "./signin.js";
import { Settings } from "./settings.js";
import { Gallery } from "./gallery.js";
import { installThemeSwitch } from "./themeswitch.js";

const $ = (id) => document.getElementById(id);

// LOST_AFTER is how many reconciles in a row that reach no service end a
// query the page lost its connection for.
const LOST_AFTER = 3;

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
  let user = "cli";
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

    // On a narrow screen the panel opens above the drawer, which stays
    // open beneath it: closing the panel goes back to the tree.
    this.treeView = new TreeView($("tree"), { onGateway: (id) => this.toolPanel.open(id) });
    // The gateways' state after listing or running a tool comes over the
    // event stream, like every other change.
    this.toolPanel = new ToolPanel({ treeView: this.treeView, onUsePrompt: (text) => this.usePrompt(text) });
    this.chat = new ChatView($("chat"), {
      onTreeUpdate: (p, queryID) => this.treeView.highlight(p, queryID),
      optionName: (id) => this.treeView.displayName(id),
      serverStatus: (id) => this.treeView.server(id),
      onTitle: (t) => this.setTitle(t, true),
      onSuggestion: (s) => this.submit(s),
      onElicitationAnswer: (p, action, content, queryID) => this.answerElicitation(p, action, content, queryID),
    });
    this.transport = new Transport({
      user, conversation,
      onEvent: (env) => this.onEvent(env),
      onState: (s) => this.setConnection(s),
      onDrop: () => this.onDrop(),
    });
    this.live = new LiveEvents({
      path: `/events/${this.base}`,
      onMessage: (m) => this.onLive(m),
      onState: (s, why) => this.setLive(s, why),
    });
    this.serversKey = "";
    this.convs = null; // the conversation list last received
  }

  async start() {
    fillIcons();
    $("conversation-meta").textContent = this.user;
    $("conversation-meta").title = `user ${this.user}, conversation ${this.conversation}`;
    this.bindUI();
    new SignIn({ user: this.user, treeEl: $("tree"), chatEl: $("chat") }).install();
    new Settings({ user: this.user }).install();
    new Gallery().install();
    installThemeSwitch();
    document.body.dataset.state = "idle";
    this.setStatus("idle");
    // The tree GET asks for a key when one is needed, so it goes first;
    // the event stream then brings the rest.
    await this.loadTree();
    this.loadInfo();
    await this.loadHistory();
    this.live.start();
    $("query-input").focus();
  }

  bindUI() {
    const input = $("query-input");
    $("query-form").addEventListener("submit", (ev) => {
      ev.preventDefault();
      this.submit();
    });
    $("query-stop").addEventListener("click", () => this.stop());
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
    $("tree-refresh").addEventListener("click", () => this.refresh());
    $("api-key-button").addEventListener("click", async () => {
      resetDismissed();
      await promptForKey(getKey() ? "Replace the stored API key." : "Enter an API key for this server.");
    });
    window.addEventListener("elysia-key", () => this.afterNewKey());
    // New settings may name another tree for a conversation not created yet.
    window.addEventListener("elysia-settings", () => this.exists === false && this.loadTree());
    // Esc stops a running query, unless something nearer took it (a
    // dialog, the panel, a form); with no query running and the keyboard
    // nowhere in particular, it closes the panel.
    document.addEventListener("keydown", (ev) => {
      if (ev.key !== "Escape" || ev.defaultPrevented || document.querySelector("dialog[open]")) return;
      if (this.running) {
        ev.preventDefault();
        this.stop();
      } else if (this.toolPanel.isOpen && (document.activeElement === document.body || !document.activeElement)) {
        ev.preventDefault();
        this.toolPanel.close();
      }
    });
    $("sidebar-toggle").addEventListener("click", () => {
      const open = document.body.classList.toggle("sidebar-open");
      $("sidebar-toggle").setAttribute("aria-expanded", String(open));
    });
    window.addEventListener("pagehide", () => {
      this.transport.close();
      this.live.close();
    });
  }

  // usePrompt puts a server prompt's text into the query box, to read,
  // edit and send (Enter); a panel that covers the chat closes.
  usePrompt(text) {
    const input = $("query-input");
    input.value = text;
    input.dispatchEvent(new Event("input"));
    if (getComputedStyle($("tool-panel")).position === "fixed") this.toolPanel.close();
    input.focus();
    input.setSelectionRange(text.length, text.length);
    input.scrollIntoView({ block: "nearest" });
  }

  afterNewKey() {
    this.transport.resetWS();
    this.serversKey = "";
    this.live.restart();
    if (!this.treeLoaded) this.loadTree();
  }

  // setConnection follows the query transport. The status shows the query,
  // not the socket: a WebSocket stays open between queries, and the status
  // is "idle" again once a query has completed.
  setConnection(s) {
    const el = $("connection");
    el.dataset.transport = s;
    if (!this.running) return;
    if (s === "connecting" || s === "reconnecting") this.setStatus(s);
    else if (s === "ws" || s === "sse") this.setStatus("running");
  }

  setStatus(state) {
    const el = $("connection");
    el.dataset.state = state;
    el.textContent = { idle: "idle", connecting: "connecting…", running: "running…", reconnecting: "reconnecting…", offline: "connection lost" }[state] || state;
    const via = { ws: " over the WebSocket", sse: " over server-sent events" }[el.dataset.transport] || "";
    el.title = state === "idle" ? "No query running"
      : state === "offline" ? "The service cannot be reached; the last query's outcome is unknown"
        : `Query ${state}${via}`;
  }

  // setLive shows the state of the event stream that keeps the page up to
  // date; only trouble is worth a note.
  setLive(state, why) {
    document.body.dataset.live = state;
    // Without the stream the servers' state is unknown: no badge may
    // stay green on a service that is gone.
    if (state === "retrying" || state === "stopped") this.staleServers();
    const note = $("live-note");
    if (state === "retrying" || state === "stopped") {
      note.textContent = state === "stopped"
        ? `Live updates stopped: ${why}.`
        : `Live updates interrupted (${why}); reconnecting…`;
      note.hidden = false;
    } else if (state === "live") {
      note.hidden = true;
    }
  }

  setTitle(title, live) {
    this.title = title || "";
    $("conversation-title").textContent = this.title || "New conversation";
    document.title = this.title ? `${this.title} · Elysia` : "Elysia";
    if (live) this.renderConversations();
  }

  // loadInfo shows which model answers, and hides the API-key button on
  // a service that asks for no key.
  async loadInfo() {
    const r = await apiJSON("/api/info", { interactive: false });
    if (!r.ok || !r.data) return;
    const model = typeof r.data.model === "string" ? r.data.model : "";
    const el = $("model-name");
    el.textContent = model ? `model ${model}` : "";
    el.title = model ? `Answers come from ${model}` : "";
    el.hidden = !model;
    $("api-key-button").hidden = r.data.auth === false && !getKey();
  }

  // ---- live state: the event stream's messages, and one-shot loads ----

  onLive(msg) {
    const p = msg.payload && typeof msg.payload === "object" ? msg.payload : {};
    switch (msg.type) {
      case "servers":
        this.renderServers(p, 200);
        break;
      case "tree":
        this.showTree(p);
        break;
      case "conversations":
        if (Array.isArray(p.conversations)) {
          this.convs = p.conversations;
          this.renderConversations();
        } else if (p.error) {
          this.renderConversations(p.error);
        }
        break;
      default:
        // A message of a newer service: nothing to show.
    }
  }

  // refresh reloads what the stream shows, at the user's request (the
  // refresh button), for when the stream is down.
  refresh() {
    this.loadTree();
    this.loadServers();
    this.loadConversations();
    this.live.start();
  }

  // loadTree shows the conversation's tree. A conversation is created by
  // its first query: opening the page creates nothing (create=false), so
  // that a visit leaves no empty conversation behind.
  async loadTree() {
    const r = await apiJSON(`/tree/${this.base}?create=false`, { interactive: !this.treeLoaded });
    if (r.data && typeof r.data.exists === "boolean") this.exists = r.data.exists;
    this.showTree(r.data && r.data.tree ? r.data : { error: r.error || "could not load the tree" });
  }

  showTree(data) {
    if (data.tree && typeof data.tree === "object" && Object.keys(data.tree).length) {
      this.treeLoaded = true;
      if (this.treeView.setTree(data.tree)) this.toolPanel.refreshInfo();
      return;
    }
    this.treeView.setError(data.error || "could not load the tree");
  }

  async loadServers() {
    const r = await apiJSON(`/api/servers?user=${encodeURIComponent(this.user)}`, { interactive: false });
    this.renderServers(r.data || { error: r.error }, r.status);
  }

  // staleServers shows every server's state as unknown until the stream
  // brings the next one.
  staleServers() {
    if (!this.servers) return;
    this.renderServers({ servers: this.servers.map((s) => ({ ...s, state: "unknown", circuit: null, tool_count: undefined })), stale: true }, 200);
  }

  renderServers(data, status) {
    const el = $("servers-status");
    if (!data || !Array.isArray(data.servers) || (data.error && !data.servers.length)) {
      if (status === 401 || status === 403) el.replaceChildren(h("div", { class: "note error small" }, "Server status needs an API key."));
      else if (!this.serversKey) el.replaceChildren(h("div", { class: "muted small" }, (data && data.error) || "Server status unavailable."));
      return;
    }
    const key = JSON.stringify([data.servers, data.config_error]);
    if (key === this.serversKey) return;
    this.serversKey = key;
    if (!data.stale) this.servers = data.servers;
    el.dataset.stale = String(Boolean(data.stale));
    this.treeView.setServers(data.servers);
    this.toolPanel.refreshInfo();
    const items = data.servers.map((s) => {
      const state = s.circuit && s.circuit.state === "open" ? "failed" : s.state || "unknown";
      return h("button", {
        type: "button", class: `server state-${state}`, dataset: { server: s.name, state: s.state || "unknown" },
        title: [s.transport, stateLabel(s.state), s.tool_count !== undefined ? `${s.tool_count} tools` : "", s.last_error].filter(Boolean).join(" · "),
        onclick: () => s.tool_name && this.toolPanel.open(s.tool_name),
      }, h("span", { class: "dot", "aria-hidden": "true" }), s.name, h("span", { class: "visually-hidden" }, ` ${stateLabel(s.state)}`));
    });
    const children = [];
    if (data.config_error) children.push(h("div", { class: "note error small", title: data.config_file || "" }, `Config error (last good config in force): ${data.config_error}`));
    if (items.length) children.push(h("div", { class: "server-chips" }, items));
    else children.push(h("div", { class: "muted small" }, "No MCP servers configured."));
    el.replaceChildren(...children);
  }

  // ---- conversations ----

  async loadConversations() {
    const r = await apiJSON(`/conversations/${encodeURIComponent(this.user)}`, { interactive: false });
    if (r.data && Array.isArray(r.data.conversations)) this.convs = r.data.conversations;
    this.renderConversations(r.error);
  }

  // renderConversations shows the last list received, with this
  // conversation's title as this page knows it (a title event arrives
  // before the list that holds it).
  renderConversations(error) {
    const list = $("conversations");
    const convs = this.convs;
    if (!convs) {
      list.replaceChildren(h("li", { class: "muted small" }, error || "No conversations."));
      return;
    }
    // A new list must not take the keyboard's place: the row that had the
    // focus gets it back.
    const active = document.activeElement;
    const refocus = active && list.contains(active) ? active.closest("li")?.dataset.conversation : undefined;
    const sorted = [...convs].sort((a, b) => String(b.updated_at || "").localeCompare(String(a.updated_at || "")));
    if (!sorted.some((c) => c.conversation_id === this.conversation)) {
      sorted.unshift({ conversation_id: this.conversation, title: this.title, updated_at: "" });
    }
    list.replaceChildren(...sorted.map((c) => {
      const current = c.conversation_id === this.conversation;
      // An id such as c-0a6102889bbfb782 means nothing to a person.
      const title = (current && this.title) || c.title || (current ? "New conversation" : "Untitled conversation");
      // One Tab stop a row: the Delete key on the row does what the trash
      // button does for the mouse.
      const confirming = this.confirming === c.conversation_id;
      const del = h("button", {
        type: "button", class: "delete icon-button" + (confirming ? " confirm" : ""), tabindex: "-1", "aria-hidden": "true", title: "Delete",
        dataset: { confirm: String(confirming) },
      }, confirming ? "Delete?" : icon("trash"));
      del.addEventListener("click", () => this.deleteConversation(c.conversation_id));
      return h("li", { class: current ? "current" : "", dataset: { conversation: c.conversation_id } },
        h("button", {
          type: "button", class: "open", "aria-current": current ? "page" : undefined,
          onclick: () => {
            if (!current) location.assign(convPath(this.user, c.conversation_id));
          },
          onkeydown: (ev) => {
            if (ev.key === "Delete" || (ev.key === "Backspace" && ev.metaKey)) {
              ev.preventDefault();
              this.deleteConversation(c.conversation_id);
            }
          },
          title: c.conversation_id,
          "aria-keyshortcuts": "Delete",
          "aria-describedby": "conv-delete-hint",
        }, h("span", { class: "conv-title" }, title), h("span", { class: "conv-time" }, relativeTime(c.updated_at))),
        del);
    }));
    if (refocus) list.querySelector(`li[data-conversation="${CSS.escape(refocus)}"] button.open`)?.focus();
  }

  // deleteConversation deletes conversation id on the second press (of
  // the trash button or the Delete key) within four seconds; the first
  // asks, on the row, which survives a new list.
  async deleteConversation(id) {
    if (this.confirming !== id) {
      clearTimeout(this.confirmTimer);
      this.confirming = id;
      this.renderConversations();
      this.confirmTimer = setTimeout(() => {
        this.confirming = "";
        this.renderConversations();
      }, 4000);
      return;
    }
    clearTimeout(this.confirmTimer);
    this.confirming = "";
    const r = await apiJSON(`/conversations/${encodeURIComponent(this.user)}/${encodeURIComponent(id)}`, { method: "DELETE" });
    if (!r.ok && r.status !== 404) {
      this.chat.note(null, "error", `Could not delete the conversation: ${r.error}`);
      return;
    }
    if (id === this.conversation) location.assign(convPath(this.user, randomID("c-")));
    else if (this.convs) {
      // The stream sends the new list too; this shows it at once.
      this.convs = this.convs.filter((c) => c.conversation_id !== id);
      this.renderConversations();
    }
  }

  // loadHistory replays the saved event log so a reopened conversation
  // shows its past. A 404 means a new conversation.
  async loadHistory() {
    if (this.exists === false) {
      // Nothing asked here yet: nothing to show, and nothing to ask for.
      this.setTitle("");
      return;
    }
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
      this.chat.endReplay();
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

  // submit sends text (a suggestion chip's), or else what the query box
  // holds.
  async submit(text) {
    const input = $("query-input");
    const query = (text ?? input.value).trim();
    if (!query || this.running) return;
    if (text === undefined) {
      input.value = "";
      input.style.height = "auto";
    }
    resetDismissed();
    const queryID = randomID("q-");
    this.running = { queryID, transport: "" };
    document.body.dataset.state = "running";
    this.setStatus("connecting");
    $("query-send").disabled = true;
    $("query-stop").hidden = false;
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
    // The server refused an answer to its question: the form shows why,
    // and the query goes on.
    if (this.chat.takeFormError(env)) {
      if (run && env.query_id === run.queryID) this.armWatchdog();
      return;
    }
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
      else this.chat.pause(run.queryID, "Connection lost; reconnecting…");
    }
  }

  // finish ends the running query on the page; lost says the service
  // could not be reached, so its outcome is unknown.
  finish(lost = false) {
    const run = this.running;
    if (!run) return;
    clearTimeout(run.errorTimer);
    clearTimeout(this.watchdog);
    clearTimeout(this.reconcileTimer);
    this.chat.endTurn(run.queryID, lost ? "lost" : "");
    this.running = null;
    document.body.dataset.state = "idle";
    this.setStatus(lost ? "offline" : "idle");
    $("query-send").disabled = false;
    $("query-stop").hidden = true;
  }

  // stop ends the running query: the service cancels it (the servers of its
  // tool calls get notifications/cancelled), and the page is free for the
  // next query at once, without waiting for the run to wind down.
  stop() {
    const run = this.running;
    if (!run) return;
    const msg = { type: "stop", user_id: this.user, conversation_id: this.conversation, query_id: run.queryID };
    if (!this.transport.sendControl(msg)) {
      apiJSON(`/query/${this.base}/stop`, { method: "POST", body: { query_id: run.queryID } }).then((r) => {
        // 404: the query had ended by itself.
        if (!r.ok && r.status !== 404) this.chat.note(run.queryID, "error", `Could not stop the query: ${r.error}`);
      });
    }
    this.chat.stopped(run.queryID);
    this.finish();
    $("query-input").focus();
  }

  // answerElicitation sends the user's answer to a server's question: over
  // the open WebSocket (a refusal comes back as an error event of the
  // query, which the form takes), else with POST /elicitations/<id>.
  async answerElicitation(p, action, content, queryID) {
    const msg = { type: "elicitation_response", user_id: this.user, conversation_id: this.conversation, query_id: queryID, elicitation_id: p.elicitation_id, action };
    if (content !== undefined) msg.content = content;
    if (this.transport.sendControl(msg)) return { sent: true };
    const body = { action, user_id: this.user };
    if (content !== undefined) body.content = content;
    const r = await apiJSON(`/elicitations/${encodeURIComponent(p.elicitation_id)}`, { method: "POST", body });
    return r.ok ? {} : { error: r.error || `request failed (${r.status})` };
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
    this.chat.pause(run.queryID, "Connection lost; reconnecting…");
    this.setConnection("reconnecting");
    this.reconcile(run.queryID, true);
  }

  async reconcile(queryID, reconnect, attempt = 0, unreachable = 0) {
    if (!this.running || this.running.queryID !== queryID) return;
    if (reconnect) this.transport.connectWS().then((ok) => ok || this.setConnection("offline"));
    const r = await apiJSON(`/conversations/${this.base}`, { interactive: false });
    // No answer at all (status 0) three times running, about seven
    // seconds: the service is gone, and the query with it as far as this
    // page can tell.
    unreachable = r.status === 0 ? unreachable + 1 : 0;
    if (unreachable >= LOST_AFTER && this.running && this.running.queryID === queryID) {
      this.chat.note(queryID, "error", "Lost the connection to the service; this query's outcome is unknown. Reload the page once the service is back.");
      this.finish(true);
      return;
    }
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
    this.reconcileTimer = setTimeout(() => this.reconcile(queryID, reconnect && !this.transport.ws, attempt + 1, unreachable), delay);
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
