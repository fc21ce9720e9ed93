package mcpendpoint

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/mcpendpoint/internal/callstream"
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
// resumeRelayWait gets 404 when every replica with a live lease said the
// stream is not theirs, and 503 with Retry-After while one of them is
// silent (it may be the holder, frozen or slow: the client resumes again,
// and gets the answer once the holder is back) or while the leases cannot
// be read. Without Replicas, silence is taken for a gone replica: 404.

// resumeRelayWait bounds the wait for the replica holding a stream to
// answer a resume: past it the client gets 404 or 503 (see above).
const resumeRelayWait = 3 * time.Second

// resumeRetryAfter is the Retry-After of a 503 to a resume whose holder
// has not answered yet.
const resumeRetryAfter = time.Second

// relayedStreams are the reads of call streams across replicas.
type relayedStreams struct {
	// mu guards mirrors and forwards.
	mu sync.Mutex
	// mirrors are other replicas' streams read here, by reader.
	mirrors map[string]*mirror
	// forwards stop the reads of streams here for other replicas, by
	// reader.
	forwards map[string]chan struct{}
}

// mirror is the asking side of a resume across replicas.
type mirror struct {
	st *callstream.Stream
	// heard is closed when the holder first answers.
	heard chan struct{}
	once  sync.Once
	// last is when the holder was last heard from (UnixNano).
	last atomic.Int64
	// absent receives the tags of the replicas that said they do not
	// hold the stream; one that finds it full is dropped (that replica
	// seems silent).
	absent chan string
}

// resumeElsewhere serves a resume of stream id of session sid that this
// replica does not hold, from the replica that does. It reports false,
// for a 404, when there is no Relay or when no replica holds the stream:
// with Replicas, when every other replica with a live lease said so;
// without, when none answered within resumeRelayWait. With Replicas, a
// silent replica with a live lease, or leases it cannot read, get the
// client 503 with Retry-After.
func (e *Endpoint) resumeElsewhere(w http.ResponseWriter, r *http.Request, id, sid, user string, seq int) bool {
	if e.opts.Relay == nil || e.opts.Sessions == nil {
		return false
	}
	var raw [8]byte
	_, _ = rand.Read(raw[:]) // crypto/rand.Read never fails
	reader := hex.EncodeToString(raw[:])
	m := &mirror{st: callstream.NewMirror(id, sid, user, seq), heard: make(chan struct{}), absent: make(chan string, 16)}
	rs := &e.relayed
	rs.mu.Lock()
	if rs.mirrors == nil {
		rs.mirrors = map[string]*mirror{}
	}
	rs.mirrors[reader] = m
	rs.mu.Unlock()
	defer func() {
		rs.mu.Lock()
		delete(rs.mirrors, reader)
		rs.mu.Unlock()
		_ = e.publish(envelope{Kind: relayLeft, Session: idHash(sid), Stream: id, Reader: reader})
	}()
	if e.publish(envelope{Kind: relayResume, Session: idHash(sid), Stream: id, Reader: reader, After: seq}) != nil {
		if e.opts.Replicas != nil { // the others were not asked: nothing says the stream is gone
			writeUnavailable(w, resumeRetryAfter, "the replica running the call could not be asked: resume the stream again")
			return true
		}
		return false
	}
	if !e.awaitHolder(w, r, m) {
		return true
	}
	e.logResume("MCP call stream resumed from another replica", sid, user, seq)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { e.watchMirror(m, stop) })
	defer func() { close(stop); wg.Wait() }()
	if err := e.streams.Resume(r.Context(), w, m.st, seq, 0); err != nil {
		e.logger.Warn("MCP call stream resume refused", logKeyUser, user, "session_hash", idHash(sid)[:16], logKeyErr, err)
	}
	return true
}

// awaitHolder waits for the replica holding m's stream to answer and
// reports whether it did. When it reports false it has answered w (503,
// or 404: no replica holds the stream), or the client left.
func (e *Endpoint) awaitHolder(w http.ResponseWriter, r *http.Request, m *mirror) bool {
	// With Replicas, the leases are read while the replicas answer.
	type leases struct {
		live []string
		err  error
	}
	var live chan leases
	if e.opts.Replicas != nil {
		live = make(chan leases, 1)
		var wg sync.WaitGroup
		defer wg.Wait()
		ctx, cancel := context.WithTimeout(r.Context(), min(e.storeWait, resumeRelayWait))
		defer cancel() // before the Wait
		wg.Go(func() {
			tags, err := e.opts.Replicas.LiveReplicas(ctx)
			live <- leases{tags, err}
		})
	}
	var (
		answered []string // the replicas that said the stream is not theirs
		got      *leases
	)
	t := time.NewTimer(resumeRelayWait)
	defer t.Stop()
	for timedOut := false; ; {
		select {
		case <-m.heard:
			return true
		case tag := <-m.absent:
			answered = append(answered, tag)
		case l := <-live:
			got, live = &l, nil
		case <-t.C:
			timedOut = true
		case <-r.Context().Done():
			return false
		}
		switch {
		case e.opts.Replicas == nil:
			if timedOut {
				return e.notHeld(w)
			}
		case got != nil && got.err == nil && len(e.silent(got.live, answered)) == 0:
			return e.notHeld(w) // every live replica said it is not theirs
		case timedOut && live != nil:
			// The leases come within their own bound, as long as this.
		case timedOut && got.err != nil:
			e.logger.Warn("reading the replicas' liveness leases for a resume", logKeyErr, got.err)
			writeUnavailable(w, resumeRetryAfter, "whether the replica running the call is alive could not be read: resume the stream again")
			return false
		case timedOut:
			if e.drain.Draining() { // Drain ended the mirror
				writeDraining(w, "this replica is shutting down: resume the stream again")
				return false
			}
			writeUnavailable(w, resumeRetryAfter, "the replica running the call has not answered yet: resume the stream again")
			return false
		}
	}
}

// notHeld answers w for a resume of a stream no replica holds: 404, or,
// while this replica drains (Drain ended the mirror), 503.
func (e *Endpoint) notHeld(w http.ResponseWriter) bool {
	if e.drain.Draining() {
		writeDraining(w, "this replica is shutting down: resume the stream again")
		return false
	}
	writeRPCError(w, http.StatusNotFound, mcp.INVALID_REQUEST,
		"unknown or expired stream in Last-Event-ID: its call ended, or its replica is gone")
	return false
}

// silent returns the replicas of live other than this one that are not
// in answered.
func (e *Endpoint) silent(live, answered []string) []string {
	var out []string
	for _, tag := range live {
		if tag != e.tag && !slices.Contains(answered, tag) {
			out = append(out, tag)
		}
	}
	return out
}

// watchMirror ends m's stream, and so its client's connection, when the
// replica forwarding it has been silent for MirrorSilence (it is gone, or
// the Relay is), until stop closes. The client may resume again then.
func (e *Endpoint) watchMirror(m *mirror, stop <-chan struct{}) {
	silence := e.streams.MirrorSilence()
	t := time.NewTicker(silence / 3)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		if time.Since(time.Unix(0, m.last.Load())) > silence {
			e.logger.Warn("the replica running a resumed MCP call went silent: its stream is closed", "silent_for", silence)
			m.st.End()
			return
		}
	}
}

// receiveResume takes another replica's resume of a call stream
// (relayResume): the holder starts forwarding the stream to its reader
// there; with Replicas, a replica without the stream says so.
func (e *Endpoint) receiveResume(m *envelope) {
	st := e.streams.Lookup(m.Stream, func(sid string) bool { return idHash(sid) == m.Session })
	if st == nil { // another replica's, or gone
		if e.opts.Replicas != nil { // the asking replica counts the answers of the live ones
			_ = e.publish(envelope{Kind: relayAbsent, Session: m.Session, Stream: m.Stream, Reader: m.Reader, Replica: e.tag})
		}
		return
	}
	rs := &e.relayed
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.forwards[m.Reader] != nil {
		return
	}
	stop := make(chan struct{})
	started := e.streams.Go(func() {
		defer func() {
			rs.mu.Lock()
			delete(rs.forwards, m.Reader)
			rs.mu.Unlock()
		}()
		e.streams.Forward(st, m.After, func(evs []callstream.Event, gone bool) bool {
			sent := e.publish(eventsMsg(st, m.Reader, evs, gone)) == nil
			if sent && len(evs) > 0 && evs[len(evs)-1].Final {
				e.drain.Answered(st.ID()) // handed to the replica serving the client
			}
			return sent
		}, stop)
	})
	if started {
		if rs.forwards == nil {
			rs.forwards = map[string]chan struct{}{}
		}
		rs.forwards[m.Reader] = stop
	}
}

// receiveLeft stops forwarding a stream here to a reader whose client
// left (relayLeft).
func (e *Endpoint) receiveLeft(m *envelope) {
	rs := &e.relayed
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if stop := rs.forwards[m.Reader]; stop != nil {
		close(stop)
		delete(rs.forwards, m.Reader)
	}
}

// receiveAbsent counts a replica's word that it does not hold the stream
// a mirror here asked for (relayAbsent).
func (e *Endpoint) receiveAbsent(m *envelope) {
	if mr := e.relayed.mirrorFor(m); mr != nil {
		select {
		case mr.absent <- m.Replica:
		default:
		}
	}
}

// receiveEvents adds the events the holder of a stream forwarded
// (relayEvents) to its mirror here.
func (e *Endpoint) receiveEvents(m *envelope) {
	mr := e.relayed.mirrorFor(m)
	if mr == nil {
		return
	}
	mr.last.Store(time.Now().UnixNano())
	for _, ev := range m.Events {
		mr.st.AddAt(ev.Seq, ev.Data, ev.Final)
	}
	if m.Gone {
		mr.st.End()
	}
	mr.once.Do(func() { close(mr.heard) })
}

// mirrorFor returns the mirror of m's reader here, if it reads m's stream.
func (rs *relayedStreams) mirrorFor(m *envelope) *mirror {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if mr := rs.mirrors[m.Reader]; mr != nil && mr.st.ID() == m.Stream {
		return mr
	}
	return nil
}

// eventsMsg is the relayEvents message of evs of st for reader.
func eventsMsg(st *callstream.Stream, reader string, evs []callstream.Event, gone bool) envelope {
	m := envelope{Kind: relayEvents, Session: idHash(st.Session()), Stream: st.ID(), Reader: reader, Gone: gone}
	for _, ev := range evs {
		if json.Valid(ev.Data) { // every message is JSON-RPC
			m.Events = append(m.Events, relayedEvent{Seq: ev.Seq, Data: ev.Data, Final: ev.Final})
		}
	}
	return m
}

// endMirrors ends the streams of other replicas read here: their
// clients resume them elsewhere.
func (rs *relayedStreams) endMirrors() {
	rs.mu.Lock()
	mirrors := make([]*mirror, 0, len(rs.mirrors))
	for _, m := range rs.mirrors {
		mirrors = append(mirrors, m)
	}
	rs.mu.Unlock()
	for _, m := range mirrors {
		m.st.End()
	}
}

// stopForwards stops the reads of streams here for other replicas.
func (rs *relayedStreams) stopForwards() {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for reader, stop := range rs.forwards {
		close(stop)
		delete(rs.forwards, reader)
	}
}
