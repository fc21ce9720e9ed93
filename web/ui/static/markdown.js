// markdown.js: the safe Markdown subset of answers and documents.
//
// Text from models, tools and servers is hostile. It is never turned into
// HTML: markdownTree parses it into plain nodes ({tag, href, lang,
// children}) whose text stays text, and markdown builds DOM nodes from
// that tree with createElement and text nodes. No HTML parser ever sees the
// input, so no markup in it, however nested or encoded, can become an
// element or an attribute. The only attribute taken from the input is a
// link's href, and only when safeHref allows it.

// SAFE_SCHEMES are the only schemes a link may have.
const SAFE_SCHEMES = new Set(["http:", "https:", "mailto:"]);

// safeHref returns url when it is an http(s) or mailto link, or a link to
// this site (/path, #frag, ?query); "" otherwise. Any whitespace or control
// character refuses the link, as browsers drop some of them while parsing a
// URL ("java\tscript:"). The scheme is the one the URL parser finds, so
// case, entities (never decoded here) and odd spellings cannot hide one.
export function safeHref(url) {
  const u = String(url ?? "");
  if (u === "" || /[\u0000-\u0020\u007f-\u009f\u2028\u2029\ufeff]/.test(u)) return "";
  if (/^[#?]/.test(u)) return u;
  if (u.startsWith("/")) return /^\/[/\\]/.test(u) ? "" : u;
  if (!/^[a-z][a-z0-9+.-]*:/i.test(u)) return "";
  let parsed;
  try {
    parsed = new URL(u);
  } catch {
    return "";
  }
  return SAFE_SCHEMES.has(parsed.protocol) ? u : "";
}

// splitBy splits text at each match of re (a global regexp): make(m) gives
// the nodes of a match, rest(s) those of the text between matches.
function splitBy(text, re, make, rest) {
  const out = [];
  let last = 0;
  for (const m of text.matchAll(re)) {
    if (m.index > last) out.push(...rest(text.slice(last, m.index)));
    out.push(...make(m));
    last = m.index + m[0].length;
  }
  if (last < text.length) out.push(...rest(text.slice(last)));
  return out;
}

const node = (tag, children, extra) => ({ tag, children, ...extra });
const plain = (s) => (s ? [s] : []);

// emphasis parses **strong**, __strong__ and *em* in text.
function emphasis(text) {
  return splitBy(text, /\*\*([^*]+)\*\*|__([^_]+)__/g,
    (m) => [node("strong", emphasis(m[1] ?? m[2]))],
    (s) => splitBy(s, /(^|[^*\w])\*([^*\s][^*]*?)\*(?!\w)/g,
      (m) => [...plain(m[1]), node("em", plain(m[2]))],
      plain));
}

// link is an anchor to href showing children, or just the children when
// href is not safe.
function link(href, children) {
  const safe = safeHref(href);
  return safe ? [node("a", children, { href: safe })] : children;
}

// autolinks makes bare http(s) URLs in text links.
function autolinks(text) {
  return splitBy(text, /(^|[\s(])(https?:\/\/[^\s<>"'`)]+)/g,
    (m) => [...plain(m[1]), ...link(m[2], [m[2]])],
    emphasis);
}

// inline parses one line: code spans first (kept verbatim), then
// [text](url) links, bare URLs, bold and italics. A link's text gets
// emphasis only: links never nest.
function inline(text) {
  return splitBy(text, /`([^`]+)`/g,
    (m) => [node("code", [m[1]])],
    (s) => splitBy(s, /\[([^\]]+)\]\(([^)\s]+)\)/g,
      (m) => link(m[2], emphasis(m[1])),
      autolinks));
}

// MAX_TABLE_COLS caps a table's columns; cells past it are dropped.
const MAX_TABLE_COLS = 32;

// tableCells splits a GFM table row into its cells' text: pipes outside
// code spans separate cells, "\|" is a literal pipe, and a leading and a
// trailing pipe are optional.
function tableCells(line) {
  let s = line.trim();
  if (s.startsWith("|")) s = s.slice(1);
  if (s.endsWith("|") && !s.endsWith("\\|")) s = s.slice(0, -1);
  const cells = [];
  let cur = "";
  let code = false;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === "\\" && s[i + 1] === "|") {
      cur += "|";
      i++;
    } else if (c === "`") {
      code = !code;
      cur += c;
    } else if (c === "|" && !code) {
      cells.push(cur.trim());
      cur = "";
    } else cur += c;
  }
  cells.push(cur.trim());
  return cells;
}

// DELIM is a GFM table's delimiter row: "| --- | :-: | --: |".
const DELIM = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;

// tableAt parses the GFM table whose header is lines[i], if there is one:
// a header row with a pipe, then a delimiter row with as many cells. It
// returns the table node and the index of the line after it, or null.
function tableAt(lines, i) {
  const headLine = lines[i];
  if (!headLine.includes("|") || i + 1 >= lines.length || !DELIM.test(lines[i + 1]) || !lines[i + 1].includes("-")) return null;
  const head = tableCells(headLine);
  const delim = tableCells(lines[i + 1]);
  if (head.length !== delim.length || (head.length < 2 && !headLine.trim().startsWith("|"))) return null;
  const n = Math.min(head.length, MAX_TABLE_COLS);
  const align = delim.slice(0, n).map((d) => (d.startsWith(":") && d.endsWith(":") ? "center" : d.endsWith(":") ? "right" : d.startsWith(":") ? "left" : ""));
  const row = (cells, tag) => node("tr", align.map((a, k) => node(tag, inline(cells[k] ?? ""), a ? { align: a } : {})));
  const body = [];
  let j = i + 2;
  for (; j < lines.length && lines[j].includes("|") && !/^\s*$/.test(lines[j]); j++) body.push(row(tableCells(lines[j]), "td"));
  const children = [node("thead", [row(head, "th")])];
  if (body.length) children.push(node("tbody", body));
  return { table: node("table", children), next: j };
}

// markdownTree parses src into a list of block nodes. Text is kept as
// strings, never as markup.
export function markdownTree(src) {
  const lines = String(src ?? "").replace(/\r\n?/g, "\n").split("\n");
  const out = [];
  let para = [];
  let list = null; // {tag, items}
  const flushPara = () => {
    if (para.length) out.push(node("p", para.flatMap((l, i) => (i ? [node("br", []), ...inline(l)] : inline(l)))));
    para = [];
  };
  const flushList = () => {
    if (list) out.push(node(list.tag, list.items.map((i) => node("li", inline(i)))));
    list = null;
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const fence = line.match(/^\s*```\s*([\w+-]*)\s*$/);
    if (fence) {
      flushPara();
      flushList();
      const code = [];
      i++;
      while (i < lines.length && !/^\s*```\s*$/.test(lines[i])) code.push(lines[i++]);
      out.push(node("pre", [node("code", plain(code.join("\n")))], fence[1] ? { lang: fence[1] } : {}));
      continue;
    }
    if (/^\s*$/.test(line)) {
      flushPara();
      flushList();
      continue;
    }
    const tbl = tableAt(lines, i);
    if (tbl) {
      flushPara();
      flushList();
      out.push(tbl.table);
      i = tbl.next - 1;
      continue;
    }
    const heading = line.match(/^(#{1,6})\s+(.*)$/);
    if (heading) {
      flushPara();
      flushList();
      out.push(node(`h${Math.min(6, heading[1].length + 2)}`, inline(heading[2])));
      continue;
    }
    const bullet = line.match(/^\s*[-*+]\s+(.*)$/);
    const numbered = line.match(/^\s*\d+[.)]\s+(.*)$/);
    if (bullet || numbered) {
      flushPara();
      const tag = bullet ? "ul" : "ol";
      if (list && list.tag !== tag) flushList();
      if (!list) list = { tag, items: [] };
      list.items.push((bullet || numbered)[1]);
      continue;
    }
    const quote = line.match(/^>\s?(.*)$/);
    if (quote) {
      flushPara();
      flushList();
      out.push(node("blockquote", inline(quote[1])));
      continue;
    }
    if (list && /^\s{2,}\S/.test(line)) {
      list.items[list.items.length - 1] += " " + line.trim();
      continue;
    }
    flushList();
    para.push(line);
  }
  flushPara();
  flushList();
  return out;
}

// TAGS are the only elements toDOM makes.
const TAGS = new Set(["p", "br", "ul", "ol", "li", "pre", "code", "blockquote", "strong", "em", "a", "h3", "h4", "h5", "h6",
  "table", "thead", "tbody", "tr", "th", "td"]);

// ALIGNS are the only alignments a table cell may carry (as data-align).
const ALIGNS = new Set(["left", "center", "right"]);

// toDOM builds the nodes of a markdownTree list into parent.
function toDOM(parent, nodes) {
  for (const n of nodes) {
    if (typeof n === "string") {
      parent.append(document.createTextNode(n));
      continue;
    }
    if (!TAGS.has(n.tag)) throw new Error(`markdown: no element ${n.tag}`);
    const el = document.createElement(n.tag);
    if (n.tag === "a") {
      // Checked again where it is set: nothing else may reach an href.
      const href = safeHref(n.href);
      if (href) el.href = href;
      el.target = "_blank";
      el.rel = "noopener noreferrer";
    }
    if (n.lang) el.dataset.lang = n.lang;
    if (ALIGNS.has(n.align)) el.dataset.align = n.align;
    if (n.tag === "th") el.scope = "col";
    toDOM(el, n.children);
    parent.append(el);
  }
  return parent;
}

// markdown renders a safe subset of Markdown as a DocumentFragment.
export function markdown(src) {
  return toDOM(document.createDocumentFragment(), markdownTree(src));
}
