// chat.js: the chat log (one turn per query, one element per event) and the
// two transports that carry events: the WebSocket /ws/query, and the SSE
// stream of POST /query/<user>/<conversation> read with fetch.
import { api, getKey } from "./api.js";
import { h, table, jsonBlock, prettyJSON, isToolList, toolCard, formatDuration } from "./render.js";
import { markdown } from "./markdown.js";
import { icon } from "./icons.js";
import { ElicitationCard } from "./elicit.js";
import { SamplingCard, samplingLine } from "./sampling.js";
import { healingNote } from "./plain.js";

const SUGGESTIONS = ["What tools do you have?", "List my todos", "Add a todo \"Buy milk\" with priority 2"];

// CALL_ENDS are the events after which no tool call of the turn is running:
// its progress bars give way to a line saying how far they got.
const CALL_ENDS = new Set(["result", "self_healing_error", "error", "text", "tree_update", "completed"]);

// isProgress reports whether a status event reports a tool's progress.
function isProgress(type, p) {
  return type === "status" && typeof p.progress === "number" && (p.tool || p.server);
}

function progressLabel(p) {
  const total = typeof p.total === "number" && p.total > 0 ? p.total : null;
  return total ? `${p.progress} / ${total}` : String(p.progress);
}

export class ChatView {
  // el is #chat. hooks: onTreeUpdate(payload), onTitle(text), onSuggestion(text)
  // (a suggestion chip was clicked: send it), onElicitationAnswer(payload,
  // action, content, queryID) (the user answered a server's question; see
  // ElicitationCard.onAnswer for what it resolves to), optionName(id) (how a
  // decision's option is named for a person), serverStatus(id) (the
  // /api/servers status of gateway id, or null).
  constructor(el, hooks = {}) {
    this.el = el;
    this.hooks = hooks;
    this.seen = new Set();
    this.turns = new Map(); // query_id → {el, events}
    this.clear();
  }

  clear() {
    this.seen.clear();
    this.turns.clear();
    this.el.replaceChildren(this.emptyState());
  }

  emptyState() {
    return h("div", { class: "empty-state" },
      h("p", { class: "empty-title" }, "Ask a question to start."),
      h("p", { class: "muted" }, "Elysia walks the decision tree on the left and calls MCP tools to answer."),
      h("div", { class: "suggestions" }, SUGGESTIONS.map((s) => h("button", {
        type: "button", class: "suggestion", onclick: () => this.hooks.onSuggestion && this.hooks.onSuggestion(s),
      }, s))));
  }

  nearBottom() {
    return this.el.scrollHeight - this.el.scrollTop - this.el.clientHeight < 80;
  }

  // scroll follows the log. It jumps rather than using the CSS smooth
  // scrolling: mid-animation, nearBottom() would read false for the next
  // event, and the log would stop following before the answer arrives.
  scroll(force) {
    if (force || this.stick) this.el.scrollTo({ top: this.el.scrollHeight, behavior: "instant" });
  }

  turn(queryID) {
    const key = queryID || "_";
    let t = this.turns.get(key);
    if (!t) {
      this.el.querySelector(".empty-state")?.remove();
      const body = h("div", { class: "turn-events" });
      const el = h("section", { class: "turn", dataset: { queryId: key } }, body);
      this.el.append(el);
      t = { el, body, started: 0, ticker: 0, bars: new Map(), cards: [] };
      this.turns.set(key, t);
    }
    return t;
  }

  // addQuery shows the user's query as the head of its turn.
  addQuery(text, queryID, { live = false } = {}) {
    const t = this.turn(queryID);
    if (t.el.querySelector(".user-query")) return;
    t.el.prepend(h("div", { class: "user-query", dataset: { type: "query" } }, h("div", { class: "bubble" }, text)));
    if (live) {
      t.started = performance.now();
      t.el.classList.add("active");
      const elapsed = h("span", { class: "elapsed" }, "");
      t.el.append(h("div", { class: "progress", "aria-hidden": "true" }, h("span", { class: "spinner" }), h("span", { class: "progress-text" }, "Thinking…"), elapsed));
      // The running time, while the query runs; it stops with the turn.
      const tick = () => {
        elapsed.textContent = formatDuration(performance.now() - t.started, 0.1);
      };
      tick();
      t.tick = tick;
      t.ticker = setInterval(tick, 100);
    }
    this.scroll(true);
  }

  // pause stops a live turn's clock and says why (its connection dropped);
  // the turn goes on if the events come back.
  pause(queryID, text) {
    const t = this.turns.get(queryID || "_");
    if (!t || !t.ticker) return;
    clearInterval(t.ticker);
    t.ticker = 0;
    const pt = t.el.querySelector(".progress-text");
    if (pt) pt.textContent = text;
    t.el.querySelector(".progress .spinner")?.remove();
  }

  // endTurn ends a turn's clock and progress; state "lost" says its
  // connection was lost, so its calls are neither done nor stopped.
  endTurn(queryID, state = "") {
    const t = this.turns.get(queryID || "_");
    if (!t) return;
    this.endCalls(t, state || (t.stopped ? "stopped" : "done"));
    for (const c of t.cards) c.expire();
    clearInterval(t.ticker);
    t.ticker = 0;
    t.el.classList.remove("active");
    t.el.querySelector(".progress")?.remove();
  }

  note(queryID, cls, text) {
    const t = this.turn(queryID);
    t.body.append(h("div", { class: `note ${cls}`, dataset: { type: "client" } }, text));
    this.scroll();
  }

  // stopped marks a turn as stopped and ends it: its progress bars stop
  // where they were, and what the run still sends is shown quietly. The
  // page calls it when the user stops a query; the run's saved end (a
  // status with "stopped": true) calls it when the conversation reopens.
  stopped(queryID, text = "Stopped.") {
    const t = this.turn(queryID);
    if (!t.stopped) {
      t.stopped = true;
      t.body.append(h("div", { class: "note stopped", dataset: { type: "stopped" } }, icon("stop"), " ", text));
    }
    this.endTurn(queryID);
    this.scroll();
  }

  // endReplay ends the replayed turns whose end was not saved (a run that
  // was still going, or stopped before its stop was saved): their progress
  // bars must not look alive.
  endReplay() {
    for (const [queryID, t] of this.turns) {
      if (t.stopped || t.ended || t.el.classList.contains("active")) continue;
      t.body.append(h("div", { class: "note stopped", dataset: { type: "unfinished" } }, "Not finished when this page loaded."));
      this.endTurn(queryID, "ended");
    }
  }

  // takeFormError gives an error event to the question of its turn whose
  // answer is on its way: the server refused that answer (a 422 over the
  // WebSocket), and the query goes on. It reports whether it did.
  takeFormError(env) {
    if (!env || env.type !== "error") return false;
    const t = this.turns.get(env.query_id || "_");
    const card = t && t.cards.find((c) => c.awaiting);
    if (!card) return false;
    const p = env.payload && typeof env.payload === "object" ? env.payload : {};
    card.fail(p.text ?? p.error ?? p.message ?? "the server refused the answer");
    return true;
  }

  // progress draws or moves the bar of one running tool call.
  progress(t, p) {
    const key = `${p.server || ""}\u0000${p.tool || ""}`;
    const total = typeof p.total === "number" && p.total > 0 ? p.total : null;
    let b = t.bars.get(key);
    const fresh = !b;
    if (fresh) {
      const bar = h("progress", { "aria-label": `${p.tool || p.server} progress` });
      const text = h("span", { class: "tp-count" });
      const message = h("span", { class: "tp-message muted" });
      const el = h("div", { class: "tool-progress", dataset: { state: "running", server: p.server || "", tool: p.tool || "" } },
        h("div", { class: "tp-head" }, icon("wrench"), " ", h("code", null, p.tool || p.server), " ", text, " ", message), bar);
      b = { el, bar, text, message, last: p };
      t.bars.set(key, b);
    }
    b.last = p;
    if (total) {
      b.bar.max = total;
      b.bar.value = Math.min(p.progress, total);
    } else {
      // No total: an indeterminate bar.
      b.bar.removeAttribute("value");
      b.bar.removeAttribute("max");
    }
    b.el.dataset.progress = String(p.progress);
    b.el.dataset.total = total ? String(total) : "";
    b.text.textContent = progressLabel(p);
    b.message.textContent = p.message || "";
    return fresh ? b.el : null;
  }

  // endCalls replaces the turn's progress bars with how far each got.
  endCalls(t, state) {
    for (const b of t.bars.values()) {
      b.el.dataset.state = state;
      b.bar.remove();
      b.text.textContent = ({ stopped: "stopped at ", lost: "lost at ", ended: "at " }[state] || "reached ") + progressLabel(b.last);
    }
    t.bars.clear();
  }

  // handle renders one event envelope. It returns false for a duplicate
  // (same id seen before), which happens when a replay and a live stream
  // overlap after a reconnect.
  handle(env, { replay = false } = {}) {
    if (!env || typeof env !== "object" || !env.type) return false;
    if (env.type === "heartbeat" || env.type === "ping") return false;
    if (env.id) {
      if (this.seen.has(env.id)) return false;
      this.seen.add(env.id);
    }
    this.stick = replay || this.nearBottom();
    const p = env.payload && typeof env.payload === "object" ? env.payload : {};
    const t = this.turn(env.query_id);
    // Events again after a lost connection: the clock goes on.
    if (!replay && t.tick && !t.ticker && t.el.classList.contains("active")) t.ticker = setInterval(t.tick, 100);
    // The run's end as a stop: the page's own Stop may have said so.
    if (env.type === "status" && p.stopped === true) {
      this.stopped(env.query_id, String(p.text || "Stopped."));
      return true;
    }
    if (CALL_ENDS.has(env.type)) this.endCalls(t, t.stopped ? "stopped" : "done");
    // The run went on after an answer: the server took it.
    if (env.type !== "error") for (const c of t.cards) c.confirm();
    const el = this.render(env.type, p, t, replay);
    if (el) {
      el.dataset.type = env.type;
      if (env.id) el.dataset.id = env.id;
      t.body.append(el);
    }
    if (env.type === "status" && p.text) {
      const pt = t.el.querySelector(".progress-text");
      if (pt) pt.textContent = p.text;
    }
    if (env.type === "completed") {
      t.ended = true;
      this.endTurn(env.query_id);
    }
    this.scroll();
    return true;
  }

  render(type, p, t, replay) {
    switch (type) {
      case "status":
        if (isProgress("status", p)) return this.progress(t, p);
        // A server used the model unattended ("sampling": "auto").
        if (p.stage === "done" && p.sampling_id) return samplingLine(p);
        if (/ asked the model to write /.test(p.text ?? "")) {
          // A server used the model (MCP sampling).
          return h("div", { class: "status sampling", dataset: { kind: "sampling" } }, icon("spark"), " ", p.text);
        }
        return h("div", { class: "status" }, p.text ?? "");
      case "elicitation": {
        const queryID = t.el.dataset.queryId;
        const Card = p.mode === "sampling" ? SamplingCard : ElicitationCard;
        const card = new Card(p, {
          replay: replay || t.stopped,
          onAnswer: (action, content) => this.hooks.onElicitationAnswer
            ? this.hooks.onElicitationAnswer(p, action, content, queryID)
            : { error: "this page cannot answer" },
        });
        if (!replay && !t.stopped) {
          t.cards.push(card);
          // The question wants the user: bring it into view once shown.
          queueMicrotask(() => card.show(this.el));
        }
        return card.el;
      }
      case "tree_update": {
        if (this.hooks.onTreeUpdate) this.hooks.onTreeUpdate(p, t.el.dataset.queryId);
        t.decision = String(p.decision ?? "");
        const el = h("div", { class: "decision" },
          h("span", { class: "decision-path" }, icon("compass"), " ", p.node ? h("code", null, p.node) : null, p.node ? " → " : "", h("code", { class: "chosen", title: p.decision ?? "" }, this.hooks.optionName ? this.hooks.optionName(String(p.decision ?? "?")) : p.decision ?? "?")));
        if (p.reasoning) el.append(h("span", { class: "reasoning-text" }, p.reasoning));
        return el;
      }
      case "result":
        return this.result(p);
      case "self_healing_error":
        // A call failed and the model was told (it may try another way):
        // a plain line for people, the model's text folded under it.
        return healingNote(p, t.decision && this.hooks.serverStatus ? this.hooks.serverStatus(t.decision) : null);
      case "warning":
        return h("div", { class: "note warning" }, icon("warning"), " ", p.text ?? p.message ?? p.warning ?? prettyJSON(p));
      case "error": {
        const text = p.text ?? p.error ?? p.message ?? p.error_message ?? prettyJSON(p);
        // What a run the user stopped says as it winds down is no news.
        if (t.stopped) return h("div", { class: "note after-stop" }, `The run ended: ${text}`);
        return h("div", { class: "note error" }, icon("error"), " ", text);
      }
      case "text": {
        const objs = Array.isArray(p.objects) ? p.objects : [];
        const text = objs.map((o) => (o && typeof o === "object" ? o.text ?? "" : String(o ?? ""))).filter(Boolean).join("\n\n") || p.text || "";
        return h("div", { class: "answer" }, markdown(text), this.sources(t, text));
      }
      case "title": {
        const title = p.title ?? p.text ?? (Array.isArray(p.objects) && p.objects[0] ? p.objects[0].title ?? p.objects[0].text : "");
        if (title && this.hooks.onTitle) this.hooks.onTitle(String(title));
        return null;
      }
      case "completed": {
        // A stopped turn says so already.
        if (t.stopped) return h("div", { class: "done", hidden: true });
        // Measured from the moment the query was sent; a replayed turn has
        // no start, so it says only that it ended.
        if (replay || !t.started) return h("div", { class: "done" }, "done");
        const ms = performance.now() - t.started;
        return h("div", { class: "done", dataset: { ms: String(Math.round(ms)) } }, `done in ${formatDuration(ms)}`);
      }
      default:
        return h("div", { class: "note" }, h("code", null, type), jsonBlock(p));
    }
  }

  // sources points an answer to the results of its turn that it does not
  // show in full: a folded table, or any result when the answer itself is
  // cut ("…" at its end), so that the whole is one click away. It returns
  // null when there is nothing to point to.
  sources(t, text) {
    const cut = /…\s*(\([^()]*\))?\s*$/.test(text);
    const results = [...t.body.querySelectorAll(':scope > details.result[data-type="result"]:not(.tool-listing)')]
      .filter((d) => cut || !d.open);
    if (!results.length) return null;
    return h("div", { class: "answer-sources small", dataset: { cut: String(cut) } },
      cut ? "The answer is cut short; the whole result is above: " : "In full above: ",
      results.flatMap((d, i) => [i ? ", " : "", h("button", {
        type: "button", class: "link-button show-result",
        onclick: () => {
          d.open = true;
          d.scrollIntoView({ block: "start", behavior: "instant" });
          d.querySelector(":scope > summary")?.focus({ preventScroll: true });
        },
      }, d.dataset.label || "the result")]));
  }

  result(p) {
    const meta = p.metadata && typeof p.metadata === "object" ? p.metadata : {};
    const objs = Array.isArray(p.objects) ? p.objects : [];
    const chips = Object.entries(meta)
      .filter(([, v]) => v !== null && typeof v !== "object" && v !== "")
      .map(([k, v]) => h("span", { class: "chip" }, `${k}: ${v}`));
    const head = h("summary", null, h("span", { class: "result-kind" }, p.type || "result"), ` ${objs.length} object${objs.length === 1 ? "" : "s"} `, chips);
    let body;
    if (p.type === "document" || p.type === "text") {
      body = h("div", { class: "documents" }, objs.map((o) => {
        const d = h("div", { class: "document" });
        const text = o && typeof o === "object" ? o.content ?? o.text ?? "" : String(o);
        if (o && o.title) d.append(h("div", { class: "doc-title" }, o.title));
        d.append(h("div", { class: "doc-body" }, markdown(typeof text === "string" ? text : prettyJSON(text))));
        if (o && o._REF_ID) d.append(h("div", { class: "ref" }, o._REF_ID));
        return d;
      }));
    } else if (meta.action === "list" && isToolList(objs)) {
      // A gateway's list is the model's business: one folded line, the
      // tools as the tool panel shows them inside.
      const n = objs.length;
      const server = typeof meta.server === "string" && meta.server ? meta.server : "a server";
      return h("details", { class: "result tool-listing", dataset: { count: String(n) } },
        h("summary", null, icon("list"), ` listed ${n} tool${n === 1 ? "" : "s"} of `, h("strong", null, server)),
        h("ul", { class: "tool-list in-chat" }, objs.map((o) => toolCard(o))));
    } else {
      body = objs.length ? table(objs) : jsonBlock(p);
    }
    const kind = p.type === "document" || p.type === "text" ? "document" : "table";
    const label = `the ${kind} of ${objs.length} ${kind === "table" ? "row" : "item"}${objs.length === 1 ? "" : "s"}`;
    return h("details", { class: "result", open: objs.length <= 25, dataset: { label } }, head, body);
  }
}

// readSSE parses a text/event-stream body and calls onEvent for each data
// message (several data: lines join with "\n"; comments are skipped).
export async function readSSE(body, onEvent) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  const sep = /\r?\n\r?\n|\r\r/;
  const flush = (block) => {
    const data = [];
    for (const line of block.split(/\r?\n|\r/)) {
      if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
    }
    if (!data.length) return;
    const text = data.join("\n");
    try {
      const v = JSON.parse(text);
      for (const env of Array.isArray(v) ? v : [v]) onEvent(env);
    } catch {
      // A non-JSON message is not ours to show.
    }
  };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += value;
    for (let m = sep.exec(buf); m; m = sep.exec(buf)) {
      flush(buf.slice(0, m.index));
      buf = buf.slice(m.index + m[0].length);
    }
  }
  if (buf.trim()) flush(buf);
}

// Transport sends queries over the WebSocket when it can and over SSE when
// it cannot. Events from either go to onEvent; onState reports
// "ws" | "sse" | "connecting" | "reconnecting" | "offline".
export class Transport {
  constructor({ user, conversation, onEvent, onState, onDrop }) {
    this.user = user;
    this.conversation = conversation;
    this.onEvent = onEvent;
    this.onState = onState || (() => {});
    this.onDrop = onDrop || (() => {});
    this.ws = null;
    this.wsReady = null;
    this.wsFailedAt = 0;
    this.wsKey = null;
    this.mode = "offline";
    this.sseAbort = null;
  }

  setState(s) {
    this.mode = s;
    this.onState(s);
  }

  // resetWS forgets a failed WebSocket (after a new key) so the next query
  // tries it again.
  resetWS() {
    this.wsFailedAt = 0;
    if (this.ws && this.wsKey !== getKey()) this.ws.close(1000, "new key");
  }

  wsURL() {
    return (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws/query";
  }

  connectWS(timeoutMs = 4000) {
    if (this.ws && this.ws.readyState === WebSocket.OPEN && this.wsKey === getKey()) return Promise.resolve(true);
    if (this.wsReady) return this.wsReady;
    if (typeof WebSocket === "undefined" || Date.now() - this.wsFailedAt < 60000) return Promise.resolve(false);
    this.wsReady = new Promise((resolve) => {
      let ws;
      const key = getKey();
      try {
        ws = key ? new WebSocket(this.wsURL(), ["bearer." + key]) : new WebSocket(this.wsURL());
      } catch {
        this.wsFailedAt = Date.now();
        resolve(false);
        return;
      }
      let opened = false;
      const timer = setTimeout(() => {
        if (!opened) {
          ws.close();
          this.wsFailedAt = Date.now();
          resolve(false);
        }
      }, timeoutMs);
      ws.addEventListener("open", () => {
        opened = true;
        clearTimeout(timer);
        this.ws = ws;
        this.wsKey = key;
        this.setState("ws");
        resolve(true);
      });
      ws.addEventListener("message", (ev) => {
        let v;
        try {
          v = JSON.parse(typeof ev.data === "string" ? ev.data : "");
        } catch {
          return;
        }
        for (const env of Array.isArray(v) ? v : [v]) this.onEvent(env);
      });
      ws.addEventListener("close", (ev) => {
        clearTimeout(timer);
        if (!opened) {
          this.wsFailedAt = Date.now();
          resolve(false);
          return;
        }
        if (this.ws === ws) this.ws = null;
        if (this.mode === "ws") this.setState("offline");
        this.onDrop(ev);
      });
    }).finally(() => {
      this.wsReady = null;
    });
    return this.wsReady;
  }

  // send starts a query. It resolves once the request is on its way over the
  // WebSocket, or once the SSE stream has ended; it returns the transport used.
  async send(query, queryID) {
    this.setState("connecting");
    if (await this.connectWS()) {
      try {
        this.ws.send(JSON.stringify({ user_id: this.user, conversation_id: this.conversation, query_id: queryID, query }));
        this.setState("ws");
        return "ws";
      } catch {
        // Closed between open and send: fall through to SSE.
      }
    }
    await this.sendSSE(query, queryID);
    return "sse";
  }

  async sendSSE(query, queryID) {
    this.sseAbort = new AbortController();
    this.setState("sse");
    try {
      const res = await api(`/query/${encodeURIComponent(this.user)}/${encodeURIComponent(this.conversation)}`, {
        method: "POST", body: { query, query_id: queryID }, accept: "text/event-stream", signal: this.sseAbort.signal,
      });
      const ctype = res.headers.get("Content-Type") || "";
      if (!res.ok || !ctype.includes("text/event-stream") || !res.body) {
        let msg = `${res.status} ${res.statusText}`.trim();
        try {
          const data = await res.json();
          if (data && data.error) msg = data.error;
        } catch {
          // Not JSON: keep the status line.
        }
        this.onEvent({ type: "error", id: "client-" + queryID + "-http", query_id: queryID, payload: { text: msg, client: true } });
        return;
      }
      await readSSE(res.body, this.onEvent);
    } catch (err) {
      if (err && err.name === "AbortError") return;
      this.onEvent({ type: "error", id: "client-" + queryID + "-net", query_id: queryID, payload: { text: "connection lost: " + (err && err.message ? err.message : err), client: true, dropped: true } });
    } finally {
      this.sseAbort = null;
      if (this.mode === "sse") this.setState("offline");
    }
  }

  // sendControl sends a control message ({"type": "stop"} or
  // "elicitation_response") over the open WebSocket; false when there is
  // none, and the caller uses the HTTP route instead.
  sendControl(msg) {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN || this.mode === "sse") return false;
    try {
      this.ws.send(JSON.stringify(msg));
      return true;
    } catch {
      return false;
    }
  }

  close() {
    if (this.sseAbort) this.sseAbort.abort();
    if (this.ws) this.ws.close(1000, "page closed");
  }
}
