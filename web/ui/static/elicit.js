// elicit.js: a server's question in the chat. An MCP server that needs
// something from the user during a tool call sends an elicitation event to
// that user only; the card shows its message and, in form mode, a form made
// from requested_schema with its defaults filled in (Accept / Decline /
// Cancel), or in url mode the link to open and Done / Decline. The answer
// goes back through onAnswer (the WebSocket, or POST /elicitations/<id>).
//
// A card's data-state: "open" (waiting for the user), "sent" (answer on its
// way), "invalid" (the server refused the answer: the error is shown next
// to the form, which is open again), "answered" (the run went on), "expired"
// (the query ended first) or "past" (a replayed question).
import { h } from "./render.js";
import { icon } from "./icons.js";
import { buildFields, collect, showFormError } from "./schemaform.js";

// safeURL allows only web links for a server's url-mode question.
function safeURL(u) {
  try {
    const url = new URL(String(u ?? ""));
    return url.protocol === "https:" || url.protocol === "http:" ? url.href : "";
  } catch {
    return "";
  }
}

let cards = 0;

// QuestionCard is what every card that waits for the user's answer to a
// server shares (a question, a sampling approval): its state in
// el.dataset.state (open, invalid, sent, answered, expired, past), the
// outcome line, and bringing it into view. A subclass builds el, form and
// outcome, and says which control takes the keyboard (focusSelector) and
// which stay disabled while the form is open (keepDisabled).
export class QuestionCard {
  // show brings the card into view (its head first when it is taller than
  // the log) and puts the keyboard on its first control.
  show(log) {
    const tall = this.el.offsetHeight > log.clientHeight;
    this.el.scrollIntoView({ block: tall ? "start" : "end", behavior: "instant" });
    this.form?.querySelector(this.focusSelector)?.focus({ preventScroll: true });
  }

  get focusSelector() {
    return "input, select, textarea, button";
  }

  // keepDisabled reports whether control c stays disabled on an open form.
  keepDisabled() {
    return false;
  }

  get state() {
    return this.el.dataset.state;
  }

  // awaiting reports whether an answer went out and its verdict is not in.
  get awaiting() {
    return this.state === "sent";
  }

  setState(state, text) {
    this.el.dataset.state = state;
    if (this.outcome && text !== undefined) this.outcome.textContent = text;
    const open = state === "open" || state === "invalid";
    if (this.form) for (const c of this.form.elements) c.disabled = !open || this.keepDisabled(c);
  }

  // confirm marks the answer as taken (the run went on after it).
  confirm() {
    if (this.state === "sent") this.setState("answered");
  }

  // expire closes a question whose query ended before it was answered.
  expire() {
    if (this.state === "open" || this.state === "invalid") this.setState("expired", "The query ended before an answer.");
    else this.confirm();
  }
}

export class ElicitationCard extends QuestionCard {
  // p is the event's payload. onAnswer(action, content) sends the answer
  // and resolves to {error} when it was refused at once, {sent: true} when
  // the verdict comes later (see confirm and fail), or {} when accepted.
  constructor(p, { onAnswer, replay = false }) {
    super();
    this.p = p;
    this.onAnswer = onAnswer;
    this.prefix = `elicit-${++cards}-`;
    this.schema = p.requested_schema && typeof p.requested_schema === "object" ? p.requested_schema : { type: "object", properties: {} };
    this.mode = p.mode === "url" ? "url" : "form";
    this.el = h("div", {
      class: "elicitation", role: "group", "aria-label": `Question from ${p.server || "a server"}`,
      dataset: { elicitationId: p.elicitation_id || "", mode: this.mode, state: replay ? "past" : "open", server: p.server || "" },
    },
    h("div", { class: "elicit-head" }, icon("question"), " ",
      h("strong", null, p.server || "A server"), " asks", p.tool ? h("span", { class: "muted" }, " during ", h("code", null, p.tool)) : null),
    p.message ? h("p", { class: "elicit-message" }, p.message) : null);
    if (replay) {
      this.el.append(h("div", { class: "muted small elicit-outcome" }, "Asked during an earlier run."));
      return;
    }
    this.form = h("form", { class: "elicit-form", novalidate: true });
    this.form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      this.answer("accept");
    });
    const err = h("div", { class: "form-error", role: "alert", hidden: true });
    if (this.mode === "url") {
      const href = safeURL(p.url);
      this.form.append(
        href
          ? h("a", { class: "elicit-link", href, target: "_blank", rel: "noopener noreferrer" }, icon("external"), " ", href)
          : h("div", { class: "note error small" }, "The server gave no web link to open."),
        err,
        h("div", { class: "form-actions" },
          h("button", { type: "button", class: "small-button decline", onclick: () => this.answer("decline") }, "Decline"),
          h("button", { type: "submit", class: "primary-button accept", disabled: !href }, icon("check"), " Done")));
    } else {
      this.form.append(...buildFields(this.schema, { prefix: this.prefix, requiredFirst: true }), err,
        h("div", { class: "form-actions" },
          h("button", { type: "button", class: "small-button cancel", onclick: () => this.answer("cancel") }, "Cancel"),
          h("button", { type: "button", class: "small-button decline", onclick: () => this.answer("decline") }, "Decline"),
          h("button", { type: "submit", class: "primary-button accept" }, "Accept")));
    }
    this.outcome = h("div", { class: "muted small elicit-outcome", role: "status" });
    this.el.append(this.form, this.outcome);
  }

  // keepDisabled keeps a URL question's Accept off when its link is unsafe.
  keepDisabled(c) {
    return c.classList.contains("accept") && this.mode === "url" && !safeURL(this.p.url);
  }

  async answer(action) {
    if (this.state !== "open" && this.state !== "invalid") return;
    let content;
    if (action === "accept" && this.mode === "form") {
      const { inputs, errors } = collect(this.form, this.schema, { prefix: this.prefix });
      if (Object.keys(errors).length) {
        this.el.dataset.state = "invalid";
        showFormError(this.form, "", errors);
        return;
      }
      content = inputs;
    }
    showFormError(this.form, "");
    this.action = action;
    this.setState("sent", { accept: this.mode === "url" ? "Done: sent." : "Answer sent.", decline: "Declined.", cancel: "Cancelled." }[action]);
    this.el.dataset.action = action;
    const r = (await this.onAnswer(action, content)) || {};
    if (r.error) this.fail(r.error);
    else if (!r.sent) this.confirm();
  }

  // fail shows why the server refused the answer, next to the form, and
  // opens the form again.
  fail(message) {
    this.setState("invalid", "");
    showFormError(this.form, message || "the server refused the answer");
  }
}
