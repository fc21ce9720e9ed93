// Package mcpendpoint is the aggregate MCP endpoint: the service as one MCP
// server over every configured server (DESIGN.md, "The aggregate MCP
// endpoint"). It serves Streamable HTTP (with per-user session ids), the
// legacy SSE transport and stdio on mcp-go's server package, lists the
// servers' tools as mcp.json's "expose" block says (every tool prefixed,
// the gateway tools, or search), and routes every call through the
// gateway, so that its breaker, validation, per-user sessions, sign-in,
// masking, logs and metrics apply.
//
// # Shape
//
// One router (router.go) takes every HTTP request: it reads a POST's body
// once, decodes it once (internal/jsonrpc), and sends a 2026-07-28 request
// by its method and a session's by its HTTP method to the one handler that
// answers it, or on to mcp-go; stdio (stdio.go) decodes each line once for
// the same handlers. What the endpoint writes on an event stream it writes,
// and what it reads of mcp-go's it reads, with internal/sse. What this
// package keeps is the endpoint's glue over mcp-go's server: the hooks, the
// handlers of the router, the calls' way to the gateways (call.go,
// client.go) and the replicas' messages (relay.go). The parts with a job
// of their own are internal packages, none of which imports this one:
//
//	internal/jsonrpc      a JSON-RPC message decoded once; the answers the endpoint writes
//	internal/sse          event streams read and written by the WHATWG rules
//	internal/catalog      the catalogue of listed tools: names, collisions, pages encoded once
//	internal/names        the names tools are listed under
//	internal/sessions     the 2025-11-25 sessions across replicas: sharing, adoption, relays
//	internal/sessionbook  the 2025-11-25 sessions here: owners, caps, eviction, adoption
//	internal/callstream   a call's resumable event stream (SEP-1699)
//	internal/streamrelay  the reads of a call stream another replica holds
//	internal/samplerelay  sampling put to a client on another replica's GET stream
//	internal/held         a held 2026-07-28 call's rounds of questions and answers
//	internal/capped       the held calls, capped in all and per user
//	internal/reqstate     the sealed requestState of an input_required result
//	internal/tasks        the Tasks extension's records and their moves
//	internal/drain        a shutdown's wait for the calls and answers in flight
//	internal/content      the gateways' results as MCP content; a call's arguments
//	internal/reply        the answer that replaces mcp-go's (a task, an error it cannot give)
//
// # Protocol versions
//
// A client of 2025-11-25 (or older) has a session: on /mcp the replicas
// of the service share it (internal/sessions), with the relays its
// server-initiated requests and resumable call streams need. A client of
// 2026-07-28 has none: each request carries its version, client info and
// capabilities, and whichever replica it reaches answers it, reading and
// writing no session (ServeMCP sends it past all of the session
// machinery). What a call must ask such a client becomes an input_required
// result with a sealed requestState (held.go, internal/reqstate), and the
// client's retry carries the answers.
//
// # The one relay of 2026-07-28
//
// A 2026-07-28 call that asked its client something is suspended, not
// ended, on the replica that runs it: the question belongs to an upstream
// request running there, and a 2025-11-25 upstream's question to its
// session held there, so the call cannot move. Its retry may reach any
// replica; one that does not hold the call passes the retry on through the
// Relay (heldrelay.go), with one message kind, mcp_input_retry, in two
// shapes (the table below). The retry carries the asking
// replica's task policy when the call may become a task (the Tasks
// extension), and the outcome is then the task's envelope instead of a
// result.
//
// # Messages between replicas
//
// The replicas of the service send each other messages through the
// Relay, each an envelope (relay.go): a JSON object whose "kind" says what
// it is, and so which of its other fields it sets. Endpoint.Receive
// decodes it and hands it to its receiver; a kind it does not know, a
// newer replica's during a rolling upgrade, it ignores. A message goes to
// every other replica, and may be lost: the receiver column says which
// replica acts on it, the others ignore it. A message names a session by
// the SHA-256 of its id, never by the id. All but mcp_input_retry belong
// to the 2025-11-25 (or older) session machinery, internal/sessions
// (shared.go, answers.go and subscribe.go for sessions shared on /mcp,
// samplerelay.go, resumerelay.go, sserelay.go there), which publishes
// and receives them through the endpoint; mcp_input_retry is the one of
// 2026-07-28 (heldrelay.go).
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
//	mcp_sample                replica running the call -> all     no (5)      the server's request fails
//	                          (the one with the session's GET                 after sampleTakenWait (6)
//	                          stream open, or opening within
//	                          sampleStreamWait, puts it to the
//	                          client)
//	mcp_sample_taken          replica with the GET stream -> all  yes         the asking replica puts the
//	                          (the asking one takes it, by its                request to its own stream if
//	                          reply id): sent before the request              it has one, and the client is
//	                          goes to the client                              asked twice (5); else it fails
//	                                                                          the request after
//	                                                                          sampleTakenWait, and the
//	                                                                          client's answer is dropped (6)
//	mcp_sampled               replica with the GET stream -> all  yes         the server's request waits
//	                          (the asking one takes it, by its                until it or the call ends, or
//	                          reply id)                                       the asking replica's deadline
//	                                                                          passes (6)
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
//	2026-07-28, no session:
//	mcp_input_retry           replica with the retry -> all       no (10)     the client is told to call
//	  (retry)                 (the holder, by tag, takes it);                 again (11)
//	                          with the asking replica's task
//	                          policy (Tasks) when the call may
//	                          become a task
//	mcp_input_retry           holder -> all (the asking replica   yes         keepalive: the next one, or
//	  (outcome)               takes it, by its reply id): a                   the holder's lease, speaks;
//	                          keepalive, the result, or the                   outcome: (12)
//	                          task's envelope (Task) when the
//	                          call became a task
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
// (6) Until a replica says it took the request (mcp_sample_taken), the
// asking replica waits sampleTakenWait (sampleTakenGrace once its own GET
// stream opened), then puts it to its own stream, or fails it saying the
// client has no GET stream open. Once it is taken, the call hears nothing
// until the server's sampling request, or the call, ends, or the deadline
// the asking replica sent passes (the call's, at most maxRelayedSampling):
// both replicas wait that long and no longer. A replica from before
// mcp_sample_taken (a rolling upgrade) takes a request without saying so:
// a person who answers it after sampleTakenWait finds the call failed.
//
// (7) The holder stays silent. With Replicas, the client gets 503 with
// Retry-After after resumeRelayWait while a replica with a live lease has
// not answered, and resumes again; without them, silence is taken for a
// gone replica, and the client gets 404.
//
// (8) A lost batch of events is marked as a gap in the mirror. A holder
// silent for MirrorSilence (three keepalives) is given up: the mirror
// ends its client's stream, which resumes again.
//
// (9) Delivered twice, the client's message is served twice (a tools/call
// runs twice). Lost, the client, answered 202 already, gets no answer on
// its stream, and its request times out at the client; when the holder is
// gone, so is the stream, and the client opens a new session.
//
// (10) A retry delivered twice hands the same answers to questions already
// answered, which ignore them, and takes the call over from the first wait.
//
// (11) The asking replica hears nothing for resumeRelayWait, then for three
// keepalives at a time: a holder whose liveness lease has gone (Replicas;
// without them, any silent one) is gone, and the client's request gets an
// error saying to call the tool again; the call, if it lives, lapses after
// InputWait.
//
// (12) The asking replica hears nothing more: after leaseTTL of silence
// from a holder whose lease lives, the client is told to call again, as in
// (11).
//
// It imports mcpgateway and tools of the project, its internal packages,
// and mcp-go's server package.
package mcpendpoint
