// Package stream serves the queries and what a client sees while work
// runs: a query streamed as Server-Sent Events (POST
// /query/:user_id/:conversation_id, sse.go) or over Elysia's WebSocket
// (GET /ws/query, ws.go), its stop and the answers to servers' questions
// (interact.go), the event streams of a user's page (GET /events/...,
// live.go), the relay that carries stops, answers and news between the
// replicas of the service (relay.go), and what a query does when the
// server drains (drain.go). Each run gets a span (run.go).
//
// It sits on top of package web: Streams.Routes is a web.RouteSet, whose
// routes authenticate, read bodies and map errors with web's Kit; the
// Kit's Watch tells the event streams of every change made through the
// Server's routes, and its TrackRun and TrackStream let web's
// Server.Drain stop the runs and close the sockets. cmd wires it:
//
//	st := stream.New(stream.Options{Runner: r, Relay: relay, Changes: changes})
//	srv := web.New(deps, &web.Options{Routes: []web.RouteSet{st.Routes}})
//	// each relayed message: st.Receive(msg); at shutdown: srv.Drain(ctx)
//
// It imports web, web/internal/sse, tools and tree; web does not import
// it.
package stream
