// panelkit.js: small helpers the gateway panel's tabs share.
import { apiJSON } from "./api.js";
import { errorNote } from "./plain.js";

// plural is "1 call", "2 calls".
export function plural(n, word) {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

// dock moves els (a form, its result) into li, the item the user clicked,
// so that they open where the click was; without li, back to the end of
// home (the tab's panel).
export function dock(li, home, ...els) {
  const to = li || home;
  for (const el of els) if (el.parentElement !== to) to.append(el);
}

// reveal scrolls el into view when it arrives, at the least distance.
export function reveal(el) {
  el.scrollIntoView({ block: "nearest" });
}

// listFeature lists what (resources, prompts) of the panel's server, with
// its progress and outcome in status: the list, or null when it failed
// (the tab loads again next time) or the panel moved to another server.
export async function listFeature(panel, what, status) {
  const gw = panel.gateway;
  panel.loaded.add(what);
  status.textContent = `Listing ${what}…`;
  const r = await apiJSON(panel.featurePath(what), { method: "POST", body: {} });
  if (gw !== panel.gateway) return null;
  const list = r.data && Array.isArray(r.data[what]) ? r.data[what] : null;
  if (!list) {
    panel.loaded.delete(what);
    status.replaceChildren(errorNote(r.error || "listing failed", panel.treeView.server(gw)));
    return null;
  }
  const one = what.slice(0, -1);
  status.textContent = list.length ? plural(list.length, one) : `This server offers no ${what}.`;
  return list;
}

// getFeature GETs what (logs, history) of the panel's server, saying so
// in status while empty (the tab shows nothing yet): the answer's field of
// that name, or null when it failed (said in status; the tab loads again
// next time), is not what ok expects, or the panel moved to another
// server meanwhile.
export async function getFeature(panel, what, status, empty, ok) {
  const gw = panel.gateway;
  if (!gw) return null;
  panel.loaded.add(what);
  if (empty) status.textContent = "Loading…";
  const r = await apiJSON(panel.featurePath(what), { interactive: false });
  if (gw !== panel.gateway) return null;
  const v = r.data && r.data[what];
  if (!v || !ok(v)) {
    panel.loaded.delete(what);
    status.replaceChildren(errorNote(r.error || `could not load the ${what}`, panel.treeView.server(gw)));
    return null;
  }
  return v;
}

// Follower runs load every ms while want() holds, one load at a time;
// update starts or stops it when want's answer changes (a tab opened or
// closed, "Live" switched, the page hidden).
export class Follower {
  constructor(ms, want, load) {
    this.ms = ms;
    this.want = want;
    this.load = load;
    this.timer = 0;
    this.busy = false;
  }

  update() {
    const want = this.want();
    if (want && !this.timer) {
      this.timer = setInterval(() => {
        if (this.busy) return;
        this.busy = true;
        Promise.resolve(this.load()).finally(() => {
          this.busy = false;
        });
      }, this.ms);
    } else if (!want && this.timer) {
      clearInterval(this.timer);
      this.timer = 0;
    }
  }
}
