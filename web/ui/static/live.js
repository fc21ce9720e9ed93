// live.js: the page's one event stream, GET /events/<user>/<conversation>.
// The service pushes the servers' state, the conversation's tree and the
// user's conversation list when they change (an mcp.json edit, a gateway
// connecting, a query ending in another tab), so the page never polls.
//
// EventSource cannot send an Authorization header, so the stream is read
// with fetch, as the query stream is. A stream that ends or fails is opened
// again after a back-off (1 s doubling to 30 s, from 1 s again once it
// delivered something); a 401 the user does not answer, or a 403, stops it
// until a new key is given.
import { api } from "./api.js";
import { readSSE } from "./chat.js";

const MIN_RETRY_MS = 1000;
const MAX_RETRY_MS = 30000;

export class LiveEvents {
  // onMessage({type, payload}) gets each message; onState(s) is told
  // "connecting" | "live" | "retrying" | "stopped", and the reason on stop.
  constructor({ path, onMessage, onState }) {
    this.path = path;
    this.onMessage = onMessage;
    this.onState = onState || (() => {});
    this.abort = null;
    this.retryTimer = 0;
    this.retryMs = MIN_RETRY_MS;
    this.closed = false;
    this.generation = 0;
  }

  // start opens the stream unless it is open or opening; restart drops the
  // one there is first (after a new API key).
  start() {
    if (this.abort || this.closed) return;
    clearTimeout(this.retryTimer);
    this.retryTimer = 0;
    this.run(++this.generation);
  }

  restart() {
    this.stop();
    this.retryMs = MIN_RETRY_MS;
    this.start();
  }

  stop() {
    clearTimeout(this.retryTimer);
    this.retryTimer = 0;
    if (this.abort) this.abort.abort();
    this.abort = null;
    this.generation++;
  }

  close() {
    this.closed = true;
    this.stop();
  }

  async run(gen) {
    const abort = new AbortController();
    this.abort = abort;
    this.onState("connecting");
    let reason = "";
    let stopped = false;
    try {
      // interactive: false, so that a dialog the user dismissed is not
      // opened again by a reconnect; the page's first request asks.
      const res = await api(this.path, { accept: "text/event-stream", signal: abort.signal, interactive: false });
      const ctype = res.headers.get("Content-Type") || "";
      if (res.status === 401 || res.status === 403) {
        stopped = true;
        reason = res.status === 401 ? "needs an API key" : "this API key may not read this user's state";
      } else if (!res.ok || !ctype.includes("text/event-stream") || !res.body) {
        reason = `${res.status} ${res.statusText}`.trim();
      } else {
        this.onState("live");
        await readSSE(res.body, (msg) => {
          if (gen !== this.generation || !msg || typeof msg.type !== "string") return;
          this.retryMs = MIN_RETRY_MS;
          this.onMessage(msg);
        });
        reason = "the stream ended";
      }
    } catch (err) {
      if (err && err.name === "AbortError") return;
      reason = err && err.message ? err.message : String(err);
    } finally {
      if (this.abort === abort) this.abort = null;
    }
    if (gen !== this.generation || this.closed) return;
    if (stopped) {
      this.onState("stopped", reason);
      return;
    }
    this.onState("retrying", reason);
    const delay = this.retryMs;
    this.retryMs = Math.min(this.retryMs * 2, MAX_RETRY_MS);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = 0;
      if (gen === this.generation) this.start();
    }, delay);
  }
}
