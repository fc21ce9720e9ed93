// Package sessions is the 2025-11-25 (and older) sessions of the
// aggregate MCP endpoint's /mcp and /sse across the replicas of the
// service: sharing a session through a SessionStore and adopting it on
// another replica (shared.go), the relays of a client's answers
// (answers.go), of sampling on another replica's GET stream
// (samplerelay.go), of resumable call streams (resume.go,
// resumerelay.go) and of the legacy SSE transport's messages
// (sserelay.go), the request ids tagged with their replica
// (requestids.go), the sessions' resource subscriptions (subscribe.go),
// the sessions evicted to make room (evict.go), and the work of a session
// cancelled when it ends (inflight.go). It is all there because the
// protocol of 2025-11-25 is stateful; one of 2026-07-28 has no session,
// and needs none of it. The day 2025-11-25 sessions are retired, the
// package goes.
//
// A Hub does this work for one mcpendpoint.Endpoint, over its mcp-go
// servers; the endpoint's router calls its handlers, and hands it the
// replicas' messages of its kinds (Receive).
//
// # Messages between replicas
//
// What the replicas send each other for these sessions (a Message each,
// which the endpoint publishes through Config.Publish and hands back to
// Receive) is in the table of mcpendpoint's package documentation, with
// who sends each kind, who acts on it, whether it is idempotent and what
// a lost one costs: the replicas' messages are one protocol, described
// in one place.
package sessions
