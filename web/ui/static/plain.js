// plain.js: words for people. A server's error and a tool call's
// self-healing error are written for the model (what happened, what to try
// next); a person gets a short plain line saying what is wrong and what
// fixes it, with the text as it was one click away (a <details>).
//
// The lines come from the server's status (/api/servers: its name, state,
// command, url, missing secrets) and from the few shapes of the gateway's
// error texts recognised here, which the browser tests pin against the
// real gateway (TestBrowserPlainWords), so that a change of wording fails
// loudly rather than falling back in silence. Every text is a text node.
//
// Markup (tests rely on it): .plain[data-problem] with data-server, its
// line in .plain-line and the raw text in details.plain-detail; a
// sign-in's line carries data-signin-server, where signin.js puts its
// Connect button. data-problem is "sign-in", "secret", "config",
// "unreachable" or "call".
import { h } from "./render.js";
import { icon } from "./icons.js";

// The gateway's texts (mcpgateway: execute.go, permanent.go, usersecrets.go;
// mcpauth: errors.go).
const SIGN_IN = /must sign in to (?:server )?"([^"]+)"|has not signed in to server (\S+?):/;
const SECRET = /must set secret (.+?) for server "([^"]+)"|has not set their own (.+?) for server (\S+?):/;
const CONFIGURED = /^server (\S+) cannot work as configured \((.+?)\):/;
const COMMAND_NOT_FOUND = /^server "([^"]+)": connect: command "([^"]+)" not found/;
const PERMISSION = /^server "([^"]+)": connect: .*permission denied/;
const SERVER = /^server "([^"]+)"/;

// code is a name or a value from mcp.json, as people see it in the file.
function code(s) {
  return h("code", null, String(s));
}

// problemOf reads what is wrong from a gateway's texts (err: the error,
// feedback: what the model was told; either may be "") and server, the
// server's status (null when unknown). It returns {kind, server, parts},
// parts being the plain line's text and nodes, or null when neither text
// has a shape it knows.
export function problemOf(err, feedback, server) {
  const texts = [String(err || ""), String(feedback || "")];
  const find = (re) => {
    for (const t of texts) {
      const m = re.exec(t);
      if (m) return m;
    }
    return null;
  };
  let m = find(SIGN_IN);
  if (m) {
    const name = m[1] || m[2];
    return { kind: "sign-in", server: name, parts: ["Sign in to ", code(name), " to use it."] };
  }
  m = find(SECRET);
  if (m) {
    const name = m[2] || m[4];
    return { kind: "secret", server: name, parts: [code(name), " needs your own ", code(m[1] || m[3]), ": set it with the lock button at the top."] };
  }
  // The server's own status says how it is configured, when it is
  // about the same server.
  const of = (name) => (server && server.name === name ? server : {});
  const nf = find(COMMAND_NOT_FOUND);
  const conf = find(CONFIGURED);
  if (nf || (conf && conf[2] === "its command was not found")) {
    const name = nf ? nf[1] : conf[1];
    const cmd = of(name).command || (nf && nf[2]);
    return {
      kind: "config", server: name,
      parts: [code(name), " can't start: ", cmd ? code(cmd) : "its command", " not found. Fix its ", code("command"), " in mcp.json."],
    };
  }
  const perm = find(PERMISSION);
  if (perm || (conf && conf[2] === "its command may not be run")) {
    const name = perm ? perm[1] : conf[1];
    const cmd = of(name).command;
    return {
      kind: "config", server: name,
      parts: [code(name), " can't start: ", cmd ? code(cmd) : "its command", " may not be run. Fix its ", code("command"), " in mcp.json, or the file's permissions."],
    };
  }
  if (conf) {
    const url = of(conf[1]).url;
    return {
      kind: "config", server: conf[1],
      parts: [code(conf[1]), " can't connect: ", conf[2], url ? [" (", code(url), ")"] : "", ". Fix its entry in mcp.json."],
    };
  }
  return null;
}

// serverProblem is what is wrong with a server, from its status alone (its
// state and last error), or null when nothing is.
export function serverProblem(s) {
  if (!s) return null;
  if (s.state === "needs_sign_in") {
    if (Array.isArray(s.missing_secrets) && s.missing_secrets.length) {
      return { kind: "secret", server: s.name, parts: [code(s.name), " needs your own ", code(s.missing_secrets.join(", ")), ": set it with the lock button at the top."] };
    }
    return { kind: "sign-in", server: s.name, parts: ["Sign in to ", code(s.name), " to use it."] };
  }
  if (!s.last_error || (s.state !== "failed" && s.state !== "degraded")) return null;
  return problemOf(s.last_error, "", s) || { kind: "unreachable", server: s.name, parts: [code(s.name), " can't be reached right now."] };
}

// plainNote is a note with problem's line and, folded under it, detail
// (the text as it was) under summary.
export function plainNote(problem, detail, summary = "Details") {
  const cls = { "sign-in": "info", secret: "info", config: "error", unreachable: "error" }[problem.kind] || "warning";
  const line = h("span", { class: "plain-line" }, ...problem.parts.flat());
  if (problem.kind === "sign-in") line.dataset.signinServer = problem.server;
  const ic = { info: "lock", error: "error" }[cls] || "warning";
  return h("div", { class: `note ${cls} plain`, dataset: { problem: problem.kind, server: problem.server || "" } },
    icon(ic), " ", line,
    detail ? h("details", { class: "plain-detail" }, h("summary", { class: "small" }, summary), h("pre", { class: "small" }, String(detail))) : null);
}

// healingNote shows a self-healing error (a failed call whose error went
// back to the model) for people. p is its payload ({error_message,
// feedback}); server is the status of the server the turn's last decision
// chose, or null.
export function healingNote(p, server) {
  const err = String(p.error_message ?? "");
  const feedback = String(p.feedback ?? "");
  const detail = [err, feedback].filter(Boolean).join("\n\n");
  const problem = problemOf(err, feedback, server);
  if (problem) return plainNote(problem, detail, "What the model was told");
  const name = (SERVER.exec(err) || [])[1] || (server && server.name) || "";
  // Anything else: the call failed, and the model saw why.
  return plainNote({
    kind: "call", server: name,
    parts: [name ? ["A call to ", code(name), " failed"] : "A tool call failed", err ? [": ", err] : "", ". The model was told why."],
  }, feedback, "What the model was told");
}

// errorNote shows text, an error of a request about server (its status, or
// null), plainly when its shape is known, else as it is.
export function errorNote(text, server) {
  const problem = problemOf(text, "", server) || serverProblem(server && server.state === "needs_sign_in" ? server : null);
  return problem ? plainNote(problem, text) : h("div", { class: "note error" }, String(text));
}
