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
// These are the rows of mcpendpoint's table of the messages between the
// replicas (its doc.go says what they have in common) that belong to the
// 2025-11-25 (or older) sessions: sessions shared on /mcp (shared.go,
// answers.go, subscribe.go), sampling on another replica's GET stream
// (samplerelay.go), call streams resumed on another replica
// (resumerelay.go), and the legacy SSE transport (sserelay.go). Each is a
// Message, which the endpoint publishes (Config.Publish).
//
//	kind                      sender -> receiver                  idempotent  lost
//
//	2025-11-25 (or older), sessions on /mcp:
//	mcp_session_ended         replica serving the DELETE -> all   yes         the others end it later (1)
//	                          (each holding the session ends it)
//	mcp_client_answer         replica the answer reached -> all   yes (2)     the request waits as if the
//	                          (the one whose tag its id bears,                client never answered (3)
//	                          or whose mcp-go waits for it,
//	                          takes it)
//	mcp_resource_updated      replica holding the subscription    yes (4)     the client misses that update
//	                          -> all (the one with the session's
//	                          GET stream open puts it to the
//	                          client)
//	mcp_resource_unsubscribe  replica the unsubscribe reached     yes         the subscription lasts until
//	                          -> all (the subscription's holder               the session ends: the server's
//	                          ends it at the server)                          updates still reach the client
//	mcp_sample                replica running the call -> all     no (5)      the server's request waits
//	                          (the one with the session's GET                 until it or the call ends (6)
//	                          stream open puts it to the client)
//	mcp_sampled               replica with the GET stream -> all  yes         as mcp_sample (6)
//	                          (the asking one takes it, by its
//	                          reply id)
//	mcp_stream_resume         asking replica -> all (the          yes         the client gets 503 or 404 (7)
//	                          stream's holder starts forwarding)
//	mcp_stream_events         holder -> all (the asking replica   yes         a gap, or the client resumes
//	                          takes it, by its reader)                        again (8)
//	mcp_stream_left           asking replica -> all (the holder   yes         the holder forwards until the
//	                          stops forwarding to that reader)                call's answer
//	mcp_stream_absent         replica without the stream -> all   yes         that replica seems silent: the
//	                          (the asking one counts it, by its               client gets 503, resumes again
//	                          reader); with Replicas only
//
//	2025-11-25 (or older), sessions of the legacy SSE transport:
//	mcp_sse_message           replica the POST /message reached   no (9)      the client gets no answer (9)
//	                          -> all (the session's holder
//	                          serves it)
//
// (1) A replica holding the session ends it when it next records the
// session's use, which it does at a request of it at most every
// touchEvery (a quarter of SessionIdleTTL, at most a minute), or when
// mcp-go ends it, unused for SessionIdleTTL; until then it may serve the
// session's requests.
//
// (2) A second delivery finds no request waiting for it: mcp-go refuses
// it, and the refusal is dropped.
//
// (3) The client was answered 202. The server's request (elicitation,
// sampling, roots) waits until its bound (for a question, the server's
// elicitation_timeout) or the end of the call.
//
// (4) The client is told twice that the resource changed, and may read it
// twice.
//
// (5) Delivered twice, the client is asked twice: the first message it
// sends back answers the call, and the other is dropped.
//
// (6) The call hears nothing until the server's sampling request, or the
// call, ends. The replica with the GET stream waits for the client at most
// maxRelayedSampling, or until the asking replica's deadline.
//
// (7) The holder stays silent. With Replicas, the client gets 503 with
// Retry-After after RelayWait (mcpendpoint's resumeRelayWait) while a
// replica with a live lease has not answered, and resumes again; without
// them, silence is taken for a gone replica, and the client gets 404.
//
// (8) A lost batch of events is marked as a gap in the mirror. A holder
// silent for MirrorSilence (three keepalives) is given up: the mirror
// ends its client's stream, which resumes again.
//
// (9) Delivered twice, the client's message is served twice (a tools/call
// runs twice). Lost, the client, answered 202 already, gets no answer on
// its stream, and its request times out at the client; when the holder is
// gone, so is the stream, and the client opens a new session.
package sessions
