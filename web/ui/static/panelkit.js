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
