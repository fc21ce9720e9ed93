// sampling.js: a server's sampling request in the chat. A server with
// "sampling": "ask" (or true) that wants the service's model to write a
// message for it asks the user first: an elicitation event of mode
// "sampling" whose payload.sampling holds the request (system prompt,
// messages, max tokens). The card shows it with Approve / Deny; once the
// model has answered, a second card shows the reply in an editable box,
// sent back as it is or as edited (Send reply), or denied. A request a
// server made with "sampling": "auto" comes as a status event with stage
// "done": a line that expands to the request and the reply.
//
// A card's data-state follows elicit.js: "open", "sent", "invalid",
// "answered", "expired" or "past"; data-stage is "request" or "reply".
import { h } from "./render.js";
import { icon } from "./icons.js";
import { QuestionCard } from "./elicit.js";

// requestView shows a sampling request (and its reply, when done): every
// text is a text node.
export function requestView(s) {
  const msgs = Array.isArray(s.messages) ? s.messages : [];
  return h("div", { class: "sampling-request" },
    s.system_prompt ? h("div", { class: "sampling-system" }, h("div", { class: "muted small" }, "System prompt"), h("pre", { class: "sampling-text" }, String(s.system_prompt))) : null,
    h("ol", { class: "sampling-messages" }, msgs.map((m) =>
      h("li", { class: "sampling-message", dataset: { role: String(m?.role ?? "") } },
        h("div", { class: "muted small sampling-role" }, String(m?.role ?? "")), h("pre", { class: "sampling-text" }, String(m?.text ?? ""))))),
    h("div", { class: "muted small sampling-max-tokens" }, `Max tokens: ${Number(s.max_tokens) || 0}`),
    s.truncated ? h("div", { class: "muted small" }, "Long texts are cut here.") : null);
}

// samplingLine is the status line of a request answered unattended: it
// expands to the request and the reply.
export function samplingLine(p) {
  return h("details", { class: "status sampling", dataset: { kind: "sampling", samplingId: String(p.sampling_id ?? "") } },
    h("summary", null, icon("spark"), " ", String(p.text ?? "")),
    requestView(p),
    h("div", { class: "sampling-reply-view" }, h("div", { class: "muted small" }, `Reply${p.model ? ` of ${p.model}` : ""}`),
      h("pre", { class: "sampling-text sampling-reply-text" }, String(p.reply ?? ""))));
}

export class SamplingCard extends QuestionCard {
  // p is the elicitation event's payload; onAnswer as for ElicitationCard.
  constructor(p, { onAnswer, replay = false }) {
    super();
    this.p = p;
    this.onAnswer = onAnswer;
    const s = p.sampling && typeof p.sampling === "object" ? p.sampling : {};
    this.s = s;
    this.stage = s.stage === "reply" ? "reply" : "request";
    this.el = h("div", {
      class: "elicitation sampling-approval", role: "group", "aria-label": `Sampling request from ${p.server || "a server"}`,
      dataset: { elicitationId: p.elicitation_id || "", mode: "sampling", stage: this.stage, state: replay ? "past" : "open", server: p.server || "" },
    },
    h("div", { class: "elicit-head" }, icon("spark"), " ",
      h("strong", null, p.server || "A server"), this.stage === "reply" ? " gets this reply from the model" : " asks to use the model",
      p.tool ? h("span", { class: "muted" }, " during ", h("code", null, p.tool)) : null),
    p.message ? h("p", { class: "elicit-message" }, p.message) : null,
    // The request was shown when it was approved: with the reply it folds.
    this.stage === "reply" ? h("details", { class: "sampling-asked" }, h("summary", { class: "small" }, "The request"), requestView(s)) : requestView(s));
    if (replay) {
      this.el.append(h("div", { class: "muted small elicit-outcome" }, "Asked during an earlier run."));
      return;
    }
    this.form = h("form", { class: "elicit-form", novalidate: true });
    this.form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      this.answer("accept");
    });
    if (this.stage === "reply") {
      const id = `sampling-reply-${p.elicitation_id || Math.random().toString(36).slice(2)}`;
      this.reply = h("textarea", { id, class: "sampling-reply", name: "reply", rows: "4", readonly: !!s.truncated });
      this.reply.value = String(s.reply ?? "");
      this.form.append(h("label", { for: id, class: "small" }, `Reply${s.model ? ` of ${s.model}` : ""}${s.truncated ? " (cut here: sent as the model wrote it)" : " (edit before sending)"}`), this.reply);
    }
    this.form.append(h("div", { class: "form-error", role: "alert", hidden: true }),
      h("div", { class: "form-actions" },
        h("button", { type: "button", class: "small-button decline", onclick: () => this.answer("decline") }, "Deny"),
        h("button", { type: "submit", class: "primary-button accept" }, icon("check"), this.stage === "reply" ? " Send reply" : " Approve")));
    this.outcome = h("div", { class: "muted small elicit-outcome", role: "status" });
    this.el.append(this.form, this.outcome);
  }

  // The keyboard starts on Approve: the request is to be read, not typed.
  get focusSelector() {
    return "button.accept";
  }

  async answer(action) {
    if (this.state !== "open" && this.state !== "invalid") return;
    let content;
    // Only an edit goes back: the reply as written by the model stays
    // whole even where the card shows it cut.
    if (action === "accept" && this.reply && !this.s.truncated && this.reply.value !== String(this.s.reply ?? "")) {
      content = { reply: this.reply.value };
    }
    this.action = action;
    this.setState("sent", action === "accept" ? (this.stage === "reply" ? "Reply sent." : "Approved.") : "Denied.");
    this.el.dataset.action = action;
    const r = (await this.onAnswer(action, content)) || {};
    if (r.error) this.fail(r.error);
    else if (!r.sent) this.confirm();
  }

  fail(message) {
    this.setState("invalid", "");
    const err = this.form?.querySelector(".form-error");
    if (err) {
      err.textContent = message || "the server refused the answer";
      err.hidden = false;
    }
  }
}
