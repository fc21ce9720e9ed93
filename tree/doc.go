// Package tree owns Elysia-Go's decision trees and the agent loop that walks
// them: decision nodes with ordered options (tools and branches), the
// initialisation modes, the tree JSON Elysia's frontend renders and its text
// view, copy-on-write sharing of default trees between conversations (the
// [Manager]), conversations with their history and environment, and the
// decision loop that asks an llms.Model to choose an option at each node.
//
// A gateway is just a tools.Tool to this package. tree imports only the
// project's tools package, its own prompt package (which renders the
// decision prompt) and, from third parties, the langchaingo llms package
// (never a provider); persistence comes in through the small [Store]
// interface, which cmd satisfies with the store package.
//
// Concurrency: a [Tree] is a plain value with no lock; trees published by a
// [Manager] are immutable and shared, and every change is made on a clone. A
// [Manager] and its [Conversation]s are safe for concurrent use; one query
// runs at a time per conversation.
package tree
