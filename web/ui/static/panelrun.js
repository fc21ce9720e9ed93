// panelrun.js: one tool run from the server panel, with the user in the
// loop. POST /api/servers/<name>/execute is asked for an event stream
// (Accept: text/event-stream): the server's progress, questions and
// warnings arrive while the call runs, then a result (or error) event. A
// call that ends before saying anything answers JSON, as without the
// header. Aborting the request cancels the call on the server.
//
// Selectors for tests: inside #tool-result, .run-view[data-state]
// ("running", "done", "cancelled"); its .tool-progress[data-state]
// [data-progress] with a <progress> while the call runs; its questions are
// .elicitation cards (see elicit.js), a sampling approval the chat's card
// (.elicitation[data-mode="sampling"], sampling.js) and an unattended
// sampling the chat's details.status.sampling line; warnings .note.warning.
import { api, apiJSON, readJSON } from "./api.js";
import { readSSE } from "./chat.js";
import { h } from "./render.js";
import { icon } from "./icons.js";
import { ElicitationCard } from "./elicit.js";
import { SamplingCard, samplingLine } from "./sampling.js";

// streamExecute runs tool_name with tool_inputs (body) on server. onEvent
// gets each event before the outcome. It resolves to apiJSON's shape
// {ok, status, data, error}, or {cancelled: true} once signal aborts.
export async function streamExecute(server, body, { signal, onEvent }) {
  const path = `/api/servers/${encodeURIComponent(server)}/execute`;
  let res;
  try {
    res = await api(path, { method: "POST", body, signal, accept: "text/event-stream, application/json" });
  } catch (err) {
    if (signal.aborted) return { cancelled: true };
    return { ok: false, status: 0, data: null, error: "network error: " + (err && err.message ? err.message : err) };
  }
  if (!(res.headers.get("Content-Type") || "").startsWith("text/event-stream")) {
    const r = await readJSON(res);
    return signal.aborted ? { cancelled: true } : r;
  }
  let outcome = null;
  try {
    await readSSE(res.body, (env) => {
      if (!env || typeof env !== "object") return;
      const p = env.payload && typeof env.payload === "object" ? env.payload : {};
      if (env.type === "result") {
        outcome = { ok: !p.error, status: 200, data: p, error: typeof p.error === "string" ? p.error : "" };
      } else if (env.type === "error" && typeof p.status === "number") {
        outcome = { ok: false, status: p.status, data: { result: null }, error: String(p.text || `request failed (${p.status})`) };
      } else if (env.type !== "completed") {
        onEvent(env);
      }
    });
  } catch (err) {
    if (signal.aborted) return { cancelled: true };
    return outcome || { ok: false, status: 0, data: null, error: "connection lost: " + (err && err.message ? err.message : err) };
  }
  if (signal.aborted) return { cancelled: true };
  return outcome || { ok: false, status: 0, data: null, error: "the stream ended before the result" };
}

function progressLabel(p) {
  const total = typeof p.total === "number" && p.total > 0 ? p.total : null;
  return total ? `${p.progress} / ${total}` : String(p.progress);
}

// RunView shows what a running call says: a progress bar, the server's
// questions as forms, its warnings.
export class RunView {
  constructor(toolName) {
    this.toolName = toolName;
    this.started = performance.now();
    this.elapsed = h("span", { class: "elapsed muted", "aria-hidden": "true" }, "0 s");
    this.line = h("div", { class: "progress", role: "status" }, h("span", { class: "spinner", "aria-hidden": "true" }), ` Running ${toolName}…`, this.elapsed);
    this.el = h("div", { class: "run-view", dataset: { state: "running" } }, this.line);
    this.cards = [];
    this.bar = null;
    this.clock = setInterval(() => {
      this.elapsed.textContent = `${Math.round((performance.now() - this.started) / 1000)} s`;
    }, 1000);
  }

  // event shows one event of the call.
  event(env) {
    const p = env.payload && typeof env.payload === "object" ? env.payload : {};
    if (env.type === "status" && typeof p.progress === "number") this.progress(p);
    // A server used the model unattended ("sampling": "auto").
    else if (env.type === "status" && p.stage === "done" && p.sampling_id) this.el.append(samplingLine(p));
    else if (env.type === "elicitation") this.ask(p);
    else if (env.type === "warning") this.el.append(h("div", { class: "note warning small" }, String(p.text ?? p.message ?? "")));
  }

  progress(p) {
    if (!this.bar) {
      const bar = h("progress", { "aria-label": `${p.tool || this.toolName} progress` });
      const text = h("span", { class: "tp-count" });
      const message = h("span", { class: "tp-message muted" });
      const el = h("div", { class: "tool-progress", dataset: { state: "running", tool: p.tool || this.toolName } },
        h("div", { class: "tp-head" }, icon("wrench"), " ", text, " ", message), bar);
      this.bar = { el, bar, text, message, last: p };
      this.line.after(el);
      el.scrollIntoView({ block: "nearest" });
    }
    const b = this.bar;
    const total = typeof p.total === "number" && p.total > 0 ? p.total : null;
    b.last = p;
    if (total) {
      b.bar.max = total;
      b.bar.value = Math.min(p.progress, total);
    } else {
      b.bar.removeAttribute("value");
      b.bar.removeAttribute("max");
    }
    b.el.dataset.progress = String(p.progress);
    b.text.textContent = progressLabel(p);
    b.message.textContent = p.message || "";
  }

  // ask shows the server's question, or its sampling request as the chat
  // shows it (the request in full, then the model's reply to edit); the
  // answer goes to POST /elicitations/<id>, and a refused answer opens the
  // form again.
  ask(p) {
    const Card = p.mode === "sampling" ? SamplingCard : ElicitationCard;
    const card = new Card(p, {
      onAnswer: async (action, content) => {
        const body = { action };
        if (content !== undefined) body.content = content;
        const r = await apiJSON(`/elicitations/${encodeURIComponent(p.elicitation_id || "")}`, { method: "POST", body });
        return r.ok ? {} : { error: r.error || `request failed (${r.status})` };
      },
    });
    this.cards.push(card);
    this.el.append(card.el);
    card.el.scrollIntoView({ block: "nearest" });
    card.form?.querySelector(card.focusSelector)?.focus({ preventScroll: true });
  }

  // end stops the clock; state is "done" or "cancelled". The bar gives way
  // to how far the call got, and open questions close.
  end(state) {
    clearInterval(this.clock);
    this.el.dataset.state = state;
    this.line.remove();
    if (this.bar) {
      this.bar.el.dataset.state = state === "cancelled" ? "stopped" : "done";
      this.bar.bar.remove();
      this.bar.text.textContent = (state === "cancelled" ? "stopped at " : "reached ") + progressLabel(this.bar.last);
    }
    for (const c of this.cards) c.expire();
    if (state === "cancelled") this.el.append(h("div", { class: "note warning small cancelled" }, "Cancelled: the server was told to stop the call."));
  }

  // empty reports whether the call showed nothing worth keeping: once it
  // ended (its running line gone), nothing at all.
  get empty() {
    return !this.el.querySelector(":scope > :not(.progress)");
  }
}
