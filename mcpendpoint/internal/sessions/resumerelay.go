package sessions

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/mcpendpoint/internal/callstream"
	"github.com/elysia-go/elysia/mcpendpoint/internal/jsonrpc"
	"github.com/elysia-go/elysia/mcpendpoint/internal/streamrelay"
)

// A call stream lives on the replica that runs the call; a client's resume
// may land on another (no sticky sessions). That replica asks the others
// through the Relay; the one holding the stream becomes its reader and
// forwards its messages until the answer, until another connection takes
// the stream, or until the asking replica says its client left. The
// asking replica serves them from a mirror, a stream of its own with the
// holder's event ids, that lives as long as the client's GET.
//
// The messages:
//   - relayResume: the asking replica to every other, once per resume.
//     The holder starts forwarding (a second one for the same reader is
//     ignored); with Replicas, every other replica answers relayAbsent.
//     Lost, the holder stays silent: see below.
//   - relayEvents: the holder to the asking replica, a batch of events,
//     at once and then at least every Keepalive; events it has already
//     are ignored (AddAt), so a batch is idempotent. Lost, the mirror
//     misses events (marked as a gap), or, silent for MirrorSilence,
//     gives the holder up and ends its client's stream, which resumes.
//   - relayLeft: the asking replica to every other when its client's GET
//     ends; idempotent. Lost, the holder forwards until the answer.
//   - relayAbsent: a replica that does not hold the stream, to the
//     asking replica, naming itself (its tag); idempotent. Lost, that
//     replica seems silent: the client gets 503 and resumes again.
//
// A replica is gone only on evidence: its liveness lease expired, or it
// has none (Replicas). A resume that no replica answers within
// RelayWait gets 404 when every replica with a live lease said the
// stream is not theirs, and 503 with Retry-After while one of them is
// silent (it may be the holder, frozen or slow: the client resumes again,
// and gets the answer once the holder is back) or while the leases cannot
// be read. Without Replicas, silence is taken for a gone replica: 404.

// resumeRetryAfter is the Retry-After of a 503 to a resume whose holder
// has not answered yet.
const resumeRetryAfter = time.Second

// resumeElsewhere serves a resume of stream id of session sid that this
// replica does not hold, from the replica that does. It reports false,
// for a 404, when there is no Relay or when no replica holds the stream:
// with Replicas, when every other replica with a live lease said so;
// without, when none answered within RelayWait. With Replicas, a
// silent replica with a live lease, or leases it cannot read, get the
// client 503 with Retry-After.
func (h *Hub) resumeElsewhere(w http.ResponseWriter, r *http.Request, id, sid, user string, seq int) bool {
	if h.Relay == nil || h.Sessions == nil {
		return false
	}
	reader, m := h.relayed.Add(callstream.NewMirror(id, sid, user, seq))
	defer func() {
		h.relayed.Remove(reader)
		_ = h.publish(Message{Kind: relayLeft, Session: idHash(sid), Stream: id, Reader: reader})
	}()
	if h.publish(Message{Kind: relayResume, Session: idHash(sid), Stream: id, Reader: reader, After: seq}) != nil {
		if h.Replicas != nil { // the others were not asked: nothing says the stream is gone
			writeUnavailable(w, resumeRetryAfter, "the replica running the call could not be asked: resume the stream again")
			return true
		}
		return false
	}
	if !h.awaitHolder(w, r, m) {
		return true
	}
	h.logResume("MCP call stream resumed from another replica", sid, user, seq)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { h.watchMirror(m, stop) })
	defer func() { close(stop); wg.Wait() }()
	if err := h.streams.Resume(r.Context(), w, m.Stream(), seq, 0); err != nil {
		h.Logger.Warn("MCP call stream resume refused", logKeyUser, user, "session_hash", idHash(sid)[:16], logKeyErr, err)
	}
	return true
}

// awaitHolder waits for the replica holding m's stream to answer and
// reports whether it did. When it reports false it has answered w (503,
// or 404: no replica holds the stream), or the client left.
func (h *Hub) awaitHolder(w http.ResponseWriter, r *http.Request, m *streamrelay.Mirror) bool {
	// With Replicas, the leases are read while the replicas answer.
	type leases struct {
		live []string
		err  error
	}
	var live chan leases
	if h.Replicas != nil {
		live = make(chan leases, 1)
		var wg sync.WaitGroup
		defer wg.Wait()
		ctx, cancel := context.WithTimeout(r.Context(), min(h.StoreWait, h.RelayWait))
		defer cancel() // before the Wait
		wg.Go(func() {
			tags, err := h.Replicas.LiveReplicas(ctx)
			live <- leases{tags, err}
		})
	}
	var (
		answered []string // the replicas that said the stream is not theirs
		got      *leases
	)
	t := time.NewTimer(h.RelayWait)
	defer t.Stop()
	for timedOut := false; ; {
		select {
		case <-m.Heard():
			return true
		case tag := <-m.Absences():
			answered = append(answered, tag)
		case l := <-live:
			got, live = &l, nil
		case <-t.C:
			timedOut = true
		case <-r.Context().Done():
			return false
		}
		switch {
		case h.Replicas == nil:
			if timedOut {
				return h.notHeld(w)
			}
		case got != nil && got.err == nil && len(h.silent(got.live, answered)) == 0:
			return h.notHeld(w) // every live replica said it is not theirs
		case timedOut && live != nil:
			// The leases come within their own bound, as long as this.
		case timedOut && got.err != nil:
			h.Logger.Warn("reading the replicas' liveness leases for a resume", logKeyErr, got.err)
			writeUnavailable(w, resumeRetryAfter, "whether the replica running the call is alive could not be read: resume the stream again")
			return false
		case timedOut:
			if h.Drain.Draining() { // Drain ended the mirror
				WriteDraining(w, "this replica is shutting down: resume the stream again")
				return false
			}
			writeUnavailable(w, resumeRetryAfter, "the replica running the call has not answered yet: resume the stream again")
			return false
		}
	}
}

// notHeld answers w for a resume of a stream no replica holds: 404, or,
// while this replica drains (Drain ended the mirror), 503.
func (h *Hub) notHeld(w http.ResponseWriter) bool {
	if h.Drain.Draining() {
		WriteDraining(w, "this replica is shutting down: resume the stream again")
		return false
	}
	jsonrpc.WriteError(w, http.StatusNotFound, mcp.INVALID_REQUEST,
		"unknown or expired stream in Last-Event-ID: its call ended, or its replica is gone")
	return false
}

// silent returns the replicas of live other than this one that are not
// in answered.
func (h *Hub) silent(live, answered []string) []string {
	var out []string
	for _, tag := range live {
		if tag != h.Tag && !slices.Contains(answered, tag) {
			out = append(out, tag)
		}
	}
	return out
}

// watchMirror ends m's stream, and so its client's connection, when the
// replica forwarding it has been silent for MirrorSilence (it is gone, or
// the Relay is), until stop closes. The client may resume again then.
func (h *Hub) watchMirror(m *streamrelay.Mirror, stop <-chan struct{}) {
	silence := h.streams.MirrorSilence()
	if m.Silent(silence, stop) {
		h.Logger.Warn("the replica running a resumed MCP call went silent: its stream is closed", "silent_for", silence)
		m.Stream().End()
	}
}

// receiveResume takes another replica's resume of a call stream
// (relayResume): the holder starts forwarding the stream to its reader
// there; with Replicas, a replica without the stream says so.
func (h *Hub) receiveResume(m *Message) {
	st := h.streams.Lookup(m.Stream, func(sid string) bool { return idHash(sid) == m.Session })
	if st == nil { // another replica's, or gone
		if h.Replicas != nil { // the asking replica counts the answers of the live ones
			_ = h.publish(Message{Kind: relayAbsent, Session: m.Session, Stream: m.Stream, Reader: m.Reader, Replica: h.Tag})
		}
		return
	}
	h.relayed.Forward(m.Reader, h.streams.Go, func(stop <-chan struct{}) {
		h.streams.Forward(st, m.After, func(evs []callstream.Event, gone bool) bool {
			sent := h.publish(eventsMsg(st, m.Reader, evs, gone)) == nil
			if sent && len(evs) > 0 && evs[len(evs)-1].Final {
				h.Drain.Answered(st.ID()) // handed to the replica serving the client
			}
			return sent
		}, stop)
	})
}

// receiveLeft stops forwarding a stream here to a reader whose client
// left (relayLeft).
func (h *Hub) receiveLeft(m *Message) {
	h.relayed.StopForward(m.Reader)
}

// receiveAbsent counts a replica's word that it does not hold the stream
// a mirror here asked for (relayAbsent).
func (h *Hub) receiveAbsent(m *Message) {
	if mr := h.relayed.Mirror(m.Reader, m.Stream); mr != nil {
		mr.Absent(m.Replica)
	}
}

// receiveEvents adds the events the holder of a stream forwarded
// (relayEvents) to its mirror here.
func (h *Hub) receiveEvents(m *Message) {
	mr := h.relayed.Mirror(m.Reader, m.Stream)
	if mr == nil {
		return
	}
	evs := make([]callstream.Event, len(m.Events))
	for i, ev := range m.Events {
		evs[i] = callstream.Event{Seq: ev.Seq, Data: ev.Data, Final: ev.Final}
	}
	mr.Receive(evs, m.Gone)
}

// eventsMsg is the relayEvents message of evs of st for reader.
func eventsMsg(st *callstream.Stream, reader string, evs []callstream.Event, gone bool) Message {
	m := Message{Kind: relayEvents, Session: idHash(st.Session()), Stream: st.ID(), Reader: reader, Gone: gone}
	for _, ev := range evs {
		if json.Valid(ev.Data) { // every message is JSON-RPC
			m.Events = append(m.Events, relayedEvent{Seq: ev.Seq, Data: ev.Data, Final: ev.Final})
		}
	}
	return m
}
