// Package prompt renders the decision prompt of Elysia-Go's agent loop: the
// system message (a node's instruction and the rules of a decision) and
// the human message, the JSON decision context of docs/DECISION_PROMPT.md,
// kept within a byte budget. It owns the folding of what grows with a
// conversation (the history into a summary and the recent turns, the tasks
// and errors of a query) and the fitting of the environment (tool results
// whole, short, as digests or counted in notes, newest first), and the
// function definitions offered to the model.
//
// It knows nothing of trees, nodes or conversations: package tree gives it
// plain values ([Context], [Option]) and sends the messages. It imports
// only the project's tools package and, from third parties, the langchaingo
// llms package (never a provider).
//
// Concurrency: its functions are safe for concurrent use; a [FormCache] is
// used by one query at a time.
package prompt
