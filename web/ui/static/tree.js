// tree.js: the decision tree as an ARIA tree (role=tree; each node's row
// is its treeitem, which owns the group of its children; one Tab stop;
// the arrow keys, Home and End move, Enter or Space opens), gateway state
// badges, and the path the agent took highlighted from tree_update events.
import { h } from "./render.js";
import { icon } from "./icons.js";
import { pinBadge } from "./pins.js";

export function isGateway(id) {
  return typeof id === "string" && id.startsWith("mcp_");
}

// stateLabel is how a person reads a server's state.
export function stateLabel(state) {
  return STATE_LABEL[state] || String(state || "unknown");
}

const STATE_LABEL = {
  idle: "idle",
  connecting: "connecting",
  connected: "connected",
  degraded: "degraded",
  failed: "failed",
  disabled: "disabled",
  needs_sign_in: "needs sign-in",
};

export class TreeView {
  // container is #tree; onGateway(id) is called when a gateway is opened.
  constructor(container, { onGateway } = {}) {
    this.el = container;
    this.onGateway = onGateway || (() => {});
    this.tree = null;
    this.treeKey = "";
    this.servers = new Map(); // tool_name → server
    this.collapsed = new Set();
    this.expanded = new Set(); // leaves whose description is open
    this.path = new Set(); // ids on the chosen path
    this.reasoning = new Map(); // decision id → reasoning
    this.current = ""; // last decision
    this.selected = "";
    this.focusID = ""; // the treeitem in the Tab order
    this.seq = 0; // ids of the name elements
    this.el.addEventListener("keydown", (ev) => this.onKey(ev));
    this.el.addEventListener("focusin", (ev) => {
      const item = ev.target.closest?.("[role=treeitem]");
      if (item && this.el.contains(item)) this.setFocusable(item);
    });
  }

  // items returns the treeitems a person sees, in order.
  items() {
    return [...this.el.querySelectorAll("[role=treeitem]")].filter((li) => li.checkVisibility ? li.checkVisibility() : li.offsetParent !== null);
  }

  // setFocusable makes item the tree's one Tab stop.
  setFocusable(item) {
    for (const li of this.el.querySelectorAll("[role=treeitem][tabindex='0']")) if (li !== item) li.tabIndex = -1;
    item.tabIndex = 0;
    this.focusID = item.closest(".node")?.dataset.id || "";
  }

  focusItem(item) {
    if (!item) return;
    this.setFocusable(item);
    item.focus();
  }

  // onKey moves through the tree as WAI-ARIA's tree pattern says.
  onKey(ev) {
    const item = ev.target.closest?.("[role=treeitem]");
    if (!item || ev.target !== item || ev.altKey || ev.ctrlKey || ev.metaKey) return;
    const items = this.items();
    const at = items.indexOf(item);
    const node = item.closest(".node");
    const id = node.dataset.id;
    const branch = node.classList.contains("branch");
    const parent = node.parentElement?.closest(".node")?.querySelector(":scope > [role=treeitem]");
    let handled = true;
    switch (ev.key) {
      case "ArrowDown":
        this.focusItem(items[at + 1]);
        break;
      case "ArrowUp":
        this.focusItem(items[at - 1]);
        break;
      case "Home":
        this.focusItem(items[0]);
        break;
      case "End":
        this.focusItem(items.at(-1));
        break;
      case "ArrowRight":
        if (branch && this.collapsed.has(id)) this.toggle(id);
        else if (branch) this.focusItem(node.querySelector(":scope > [role=group] > .node > [role=treeitem]"));
        break;
      case "ArrowLeft":
        if (branch && !this.collapsed.has(id)) this.toggle(id);
        else this.focusItem(parent);
        break;
      case "Enter":
      case " ":
        item.querySelector(":scope > .label")?.click();
        break;
      default:
        handled = false;
    }
    if (handled) ev.preventDefault();
  }

  // setTree re-renders only when the tree JSON changed; it returns whether
  // it did.
  setTree(tree) {
    const key = JSON.stringify(tree ?? null);
    if (key === this.treeKey) return false;
    this.treeKey = key;
    this.tree = tree;
    this.render();
    return true;
  }

  setError(message) {
    if (this.tree) {
      this.el.dataset.stale = "true";
      this.el.title = message;
      return;
    }
    this.el.replaceChildren(h("div", { class: "note error" }, message));
  }

  // setServers stores /api/servers and refreshes the badges in place.
  setServers(list) {
    this.servers = new Map();
    for (const s of list || []) if (s && s.tool_name) this.servers.set(s.tool_name, s);
    for (const node of this.el.querySelectorAll(".node[data-gateway]")) {
      const name = node.querySelector(":scope > .row .name");
      if (name) name.textContent = this.displayName(node.dataset.id);
      const old = node.querySelector(":scope > .row .badge:not(.pin-badge)");
      const badge = this.badge(node.dataset.id);
      if (old) old.replaceWith(badge);
      // A server whose tools changed since they were approved says so.
      node.querySelector(":scope > .row .pin-badge")?.remove();
      const pins = pinBadge(this.servers.get(node.dataset.id));
      if (pins) badge.after(pins);
    }
    delete this.el.dataset.stale;
  }

  server(id) {
    return this.servers.get(id) || null;
  }

  // displayName is how a person knows option id: a gateway by its server's
  // name in mcp.json (todo, not mcp_todo or "Mcp todo"), else the id.
  displayName(id) {
    const s = this.servers.get(id);
    if (s && s.name) return s.name;
    return isGateway(id) ? id.slice("mcp_".length) : id;
  }

  badge(id) {
    const s = this.servers.get(id);
    if (!s) return h("span", { class: "badge state-unknown", title: "no server status" }, "…");
    const circuit = s.circuit && s.circuit.state ? s.circuit.state : "";
    let state = s.state || "unknown";
    let label = STATE_LABEL[state] || state;
    if (circuit === "open") label = "circuit open";
    else if (circuit === "half-open" || circuit === "half_open") label += " · trial";
    if (state === "connected" && s.tool_count !== undefined) label += ` · ${s.tool_count}`;
    // A server with copies that runs on a fallback says on which.
    const copies = Array.isArray(s.copies) ? s.copies : [];
    const fallback = copies.length > 0 && s.serving && s.serving !== copies[0].label;
    if (fallback && circuit !== "open") label += ` · on ${s.serving}`;
    const title = [
      `${s.name} (${s.transport || "?"}): ${stateLabel(state)}`,
      copies.length ? `${copies.length} copies, ${s.serving ? "serving: " + s.serving : "none can serve now"}` : "",
      s.tool_count !== undefined ? `${s.tool_count} tools` : "",
      circuit ? `circuit ${circuit}${s.circuit.retry_at ? " until " + s.circuit.retry_at : ""}` : "",
      s.last_error ? `last error: ${s.last_error}` : "",
    ].filter(Boolean).join("\n");
    return h("span", { class: `badge state-${circuit === "open" ? "failed" : state}`, title, dataset: { state, serving: s.serving || undefined } }, label);
  }

  render() {
    const root = this.tree;
    if (!root || typeof root !== "object") {
      this.el.replaceChildren(h("div", { class: "muted" }, "No tree."));
      return;
    }
    const focusedID = document.activeElement && this.el.contains(document.activeElement)
      ? document.activeElement.closest(".node")?.dataset.id : null;
    this.el.replaceChildren(h("ul", { class: "tree-root", role: "tree", "aria-label": "Decision tree" }, this.node(root, 0, 1)));
    this.applyHighlight();
    const want = focusedID || this.focusID;
    const item = (want && this.el.querySelector(`.node[data-id="${CSS.escape(want)}"] > [role=treeitem]`)) || this.el.querySelector("[role=treeitem]");
    if (item) this.setFocusable(item);
    if (focusedID && item) item.focus();
  }

  node(n, depth, level) {
    const id = String(n.id ?? "");
    const options = n.options && typeof n.options === "object" ? Object.values(n.options) : [];
    const isBranch = n.branch === true || options.length > 0;
    const gw = !isBranch && isGateway(id);
    const collapsed = isBranch && this.collapsed.has(id);
    const open = this.expanded.has(id);
    const desc = n.description || "";
    const groupID = `tree-group-${++this.seq}`;
    const li = h("li", {
      class: `node ${isBranch ? "branch" : "tool"}${gw ? " gateway" : ""}${this.selected === id ? " selected" : ""}`,
      dataset: { id }, role: "none",
    });
    if (gw) li.dataset.gateway = "true";
    // The twisty, the label and the "i" are for the mouse: the keyboard
    // works on the treeitem itself.
    const twisty = isBranch
      ? h("span", { class: "twisty", "aria-hidden": "true", onclick: () => this.toggle(id) }, icon(collapsed ? "chevron-right" : "chevron-down"))
      : h("span", { class: "twisty-space" });
    const label = h("span", {
      class: "label", title: desc || undefined,
      onclick: () => {
        if (isBranch) this.toggle(id);
        else if (gw) {
          this.selected = id;
          for (const el of this.el.querySelectorAll(".node.selected")) el.classList.remove("selected");
          li.classList.add("selected");
          for (const el of this.el.querySelectorAll(".node.gateway > .row")) el.setAttribute("aria-selected", String(el === row));
          this.onGateway(id);
        } else this.toggleDesc(id);
      },
    },
    h("span", { class: "node-icon", "aria-hidden": "true" }, icon(isBranch ? "folder" : gw ? "plug" : "wrench")),
    h("span", { class: "name" }, gw ? this.displayName(id) : n.name || id),
    !gw && n.name && n.name.toLowerCase().replace(/ /g, "_") !== id ? h("span", { class: "id" }, id) : null);
    // The row is the treeitem: its name is its own text (the node's name,
    // and a gateway's state), not its description's or its children's.
    const row = h("div", {
      class: "row", role: "treeitem", tabindex: "-1", "aria-level": String(level),
      "aria-expanded": isBranch ? String(!collapsed) : gw ? undefined : String(open),
      "aria-selected": gw ? String(this.selected === id) : undefined,
      "aria-owns": isBranch && !collapsed ? groupID : undefined,
    }, twisty, label);
    if (gw) {
      // The badge, a Connect button (signin.js) and the "i" stay together:
      // beside the name when they fit, else on a line of their own.
      row.append(h("span", { class: "row-tail" }, this.badge(id), pinBadge(this.servers.get(id)), h("button", {
        type: "button", class: "info icon-button", tabindex: "-1", "aria-hidden": "true", title: `Describe ${this.displayName(id)}`, "aria-expanded": String(open),
        onclick: () => this.toggleDesc(id),
      }, "i")));
    }
    li.append(row);
    const detail = [];
    if (isBranch && depth === 0 && n.instruction) detail.push(h("div", { class: "instruction" }, n.instruction));
    else if (isBranch && desc) detail.push(h("div", { class: "desc" }, desc));
    if (!isBranch && open && desc) detail.push(h("div", { class: "desc" }, desc));
    if (!isBranch && open && n.instruction) detail.push(h("div", { class: "instruction" }, n.instruction));
    if (detail.length && !collapsed) li.append(...detail);
    li.append(h("div", { class: "reasoning", hidden: true }));
    if (isBranch && !collapsed) {
      li.append(h("ul", { class: "children", role: "group", id: groupID }, options.map((o) => this.node(o, depth + 1, level + 1))));
    }
    return li;
  }

  toggle(id) {
    if (this.collapsed.has(id)) this.collapsed.delete(id);
    else this.collapsed.add(id);
    this.render();
  }

  toggleDesc(id) {
    if (this.expanded.has(id)) this.expanded.delete(id);
    else this.expanded.add(id);
    this.render();
  }

  // highlight records one tree_update: {node, decision, reasoning, reset}
  // of the query queryID. reset marks the last update of a pass (the next
  // pass starts again at the root), so it does not clear anything: the path
  // shows every option the query used, and a new query starts a new path.
  highlight(p, queryID) {
    if (!p || typeof p !== "object") return;
    if (queryID !== undefined && queryID !== this.pathQuery) {
      this.pathQuery = queryID;
      this.path.clear();
      this.reasoning.clear();
    }
    if (p.node) this.path.add(String(p.node));
    if (p.decision) {
      const d = String(p.decision);
      this.path.add(d);
      this.current = d;
      if (p.reasoning) this.reasoning.set(d, String(p.reasoning));
      // A chosen option inside a collapsed branch is worth showing.
      let changed = false;
      for (const id of this.ancestors(d)) if (this.collapsed.delete(id)) changed = true;
      if (changed) {
        this.render();
        return;
      }
    }
    this.applyHighlight();
  }

  clearHighlight() {
    this.pathQuery = undefined;
    this.path.clear();
    this.reasoning.clear();
    this.current = "";
    this.applyHighlight();
  }

  ancestors(id) {
    const out = [];
    const walk = (n, trail) => {
      if (!n || typeof n !== "object") return false;
      if (n.id === id) {
        out.push(...trail);
        return true;
      }
      const opts = n.options && typeof n.options === "object" ? Object.values(n.options) : [];
      return opts.some((o) => walk(o, [...trail, n.id]));
    };
    walk(this.tree, []);
    return out;
  }

  applyHighlight() {
    for (const el of this.el.querySelectorAll(".node")) {
      const id = el.dataset.id;
      el.classList.toggle("on-path", this.path.has(id));
      el.classList.toggle("current", this.current === id);
      const r = el.querySelector(":scope > .reasoning");
      if (!r) continue;
      const text = this.reasoning.get(id);
      r.hidden = !text;
      if (text) r.replaceChildren(icon("thought"), " ", text);
      else r.replaceChildren();
    }
  }
}
