// panelkit.js: small helpers the gateway panel's tabs share.

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
