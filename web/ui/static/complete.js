// complete.js: a server's suggestions for an argument (MCP's
// completion/complete) on a text input: the input lists a <datalist> that
// is refilled, a moment after the user stops typing, with what the server
// suggests for the value so far and the other arguments' values.
//
// Selectors for tests: the input's datalist is #<input id>-options; the
// input's data-suggestions is how many options the last answer gave.
import { apiJSON } from "./api.js";
import { h } from "./render.js";

// ASK_AFTER is how long typing must pause before the server is asked, in
// ms: one request per pause, not one per key.
const ASK_AFTER = 150;

// MAX_SHOWN is the most suggestions the list shows (the service sends at
// most 100).
const MAX_SHOWN = 100;

// Completer asks one server about the arguments of one prompt or resource
// template. After an answer that is not a completion (a server without
// completions, an old service), it asks no more.
class Completer {
  // path is the complete route; ref the MCP reference ({type: "ref/prompt",
  // name} or {type: "ref/resource", uri}).
  constructor(path, ref) {
    this.path = path;
    this.ref = ref;
    this.off = false;
  }

  // attach makes input (with an id and a name) suggest the server's
  // values; context() returns the other arguments' values. It returns the
  // datalist, which goes into the document next to the input.
  attach(input, context) {
    const list = h("datalist", { id: input.id + "-options" });
    input.setAttribute("list", list.id);
    input.setAttribute("autocomplete", "off");
    let timer = 0;
    let asked = "";
    let inFlight = null; // the AbortController of the question on its way
    const ask = async () => {
      const args = context();
      const key = JSON.stringify([input.value, args]);
      if (this.off || key === asked || !input.isConnected) return;
      asked = key;
      // A newer question replaces the last: its request ends, and the
      // service cancels it on the server.
      inFlight?.abort();
      const mine = new AbortController();
      inFlight = mine;
      let r;
      try {
        r = await apiJSON(this.path, {
          method: "POST", interactive: false, signal: mine.signal,
          body: { ref: this.ref, argument: { name: input.name, value: input.value }, context: { arguments: args } },
        });
      } catch {
        return; // replaced by a newer question
      }
      if (inFlight !== mine) return;
      inFlight = null;
      const c = r.ok && r.data && r.data.completion;
      if (!c || !Array.isArray(c.values)) {
        if (r.status !== 0) this.off = true;
        asked = "";
        return;
      }
      const values = c.values.filter((v) => typeof v === "string").slice(0, MAX_SHOWN);
      list.replaceChildren(...values.map((v) => h("option", { value: v })));
      input.dataset.suggestions = String(values.length);
    };
    const later = () => {
      clearTimeout(timer);
      timer = setTimeout(ask, ASK_AFTER);
    };
    input.addEventListener("input", later);
    input.addEventListener("focus", later);
    return list;
  }
}

// argumentsOf returns the non-empty values of form's text inputs, by name,
// but for except's.
function argumentsOf(form, except) {
  const out = {};
  for (const el of form.querySelectorAll("input[name], textarea[name]")) {
    if (el !== except && el.value !== "") out[el.name] = el.value;
  }
  return out;
}

// suggestIn gives each text input of form the server's suggestions for
// ref's arguments, asked at path (the complete route).
export function suggestIn(form, path, ref) {
  const c = new Completer(path, ref);
  for (const el of form.querySelectorAll("input[type=text][name]")) el.after(c.attach(el, () => argumentsOf(form, el)));
}
