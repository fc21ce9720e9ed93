package mcpendpoint

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/elysia-go/elysia/mcpendpoint/internal/callstream"
)

// A call stream lives on the replica that runs the call; a client's resume
// may land on another (no sticky sessions). That replica asks the others
// through the Relay (relayResume); the one holding the stream becomes its
// reader and forwards its messages (relayEvents) until the answer, until
// another connection takes the stream, or until the asking replica says
// its client left (relayLeft). The asking replica serves them from a
// mirror, a stream of its own with the holder's event ids, that lives as
// long as the client's GET.

// Kinds of the Relay messages of call streams.
const (
	relayResume = "mcp_stream_resume"
	relayEvents = "mcp_stream_events"
	relayLeft   = "mcp_stream_left"
)

// resumeRelayWait bounds the wait for the replica holding a stream to
// answer a resume: past it the client gets 404.
const resumeRelayWait = 3 * time.Second

// streamRelayMsg is a Relay message of a call stream.
type streamRelayMsg struct {
	Kind string `json:"kind"`
	// Session is the idHash of the stream's session.
	Session string `json:"session"`
	Stream  string `json:"stream"`
	// Reader names the asking replica's reader: its mirror.
	Reader string `json:"reader"`
	// After is the last event the client has (relayResume).
	After  int            `json:"after,omitempty"`
	Events []relayedEvent `json:"events,omitempty"`
	// Gone says the holder stopped forwarding: another connection took
	// the stream, or it is forgotten (relayEvents).
	Gone bool `json:"gone,omitempty"`
}

type relayedEvent struct {
	Seq   int             `json:"seq"`
	Data  json.RawMessage `json:"data"`
	Final bool            `json:"final,omitempty"`
}

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
}

// resumeElsewhere serves a resume of stream id of session sid that this
// replica does not hold, from the replica that does. It reports false
// when there is no Relay or no replica answered.
func (e *Endpoint) resumeElsewhere(w http.ResponseWriter, r *http.Request, id, sid, user string, seq int) bool {
	if e.opts.Relay == nil || e.opts.Sessions == nil {
		return false
	}
	var raw [8]byte
	_, _ = rand.Read(raw[:]) // crypto/rand.Read never fails
	reader := hex.EncodeToString(raw[:])
	m := &mirror{st: callstream.NewMirror(id, sid, user, seq), heard: make(chan struct{})}
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
		e.publishStream(streamRelayMsg{Kind: relayLeft, Session: idHash(sid), Stream: id, Reader: reader})
	}()
	if !e.publishStream(streamRelayMsg{Kind: relayResume, Session: idHash(sid), Stream: id, Reader: reader, After: seq}) {
		return false
	}
	t := time.NewTimer(resumeRelayWait)
	defer t.Stop()
	select {
	case <-m.heard:
	case <-t.C:
		if e.drain.isDraining() { // Drain ended the mirror: not a sign the stream is gone
			writeDraining(w, "this replica is shutting down: resume the stream again")
			return true
		}
		return false
	case <-r.Context().Done():
		return true
	}
	e.logResume("MCP call stream resumed from another replica", sid, user, seq)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { e.watchMirror(m, stop) })
	defer func() { close(stop); wg.Wait() }()
	callstream.Start(w)
	e.streams.Serve(r.Context(), w, m.st, seq, 0)
	return true
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

// publishStream sends m through the Relay and reports whether it could.
func (e *Endpoint) publishStream(m streamRelayMsg) bool {
	msg, err := json.Marshal(m)
	return err == nil && e.opts.Relay.Publish(msg) == nil
}

// receiveStream handles a Relay message of a call stream, on the Relay's
// goroutine: it never blocks.
func (e *Endpoint) receiveStream(msg []byte) {
	var m streamRelayMsg
	if json.Unmarshal(msg, &m) != nil {
		return
	}
	rs := &e.relayed
	switch m.Kind {
	case relayResume:
		st := e.streams.Lookup(m.Stream, func(sid string) bool { return idHash(sid) == m.Session })
		if st == nil {
			return // another replica's, or gone
		}
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
				sent := e.publishStream(eventsMsg(st, m.Reader, evs, gone))
				if sent && len(evs) > 0 && evs[len(evs)-1].Final {
					e.drain.answered(st.ID()) // handed to the replica serving the client
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
	case relayLeft:
		rs.mu.Lock()
		if stop := rs.forwards[m.Reader]; stop != nil {
			close(stop)
			delete(rs.forwards, m.Reader)
		}
		rs.mu.Unlock()
	case relayEvents:
		rs.mu.Lock()
		mr := rs.mirrors[m.Reader]
		rs.mu.Unlock()
		if mr == nil || mr.st.ID() != m.Stream {
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
}

// eventsMsg is the relayEvents message of evs of st for reader.
func eventsMsg(st *callstream.Stream, reader string, evs []callstream.Event, gone bool) streamRelayMsg {
	m := streamRelayMsg{Kind: relayEvents, Session: idHash(st.Session()), Stream: st.ID(), Reader: reader, Gone: gone}
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
