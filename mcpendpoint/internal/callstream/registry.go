package callstream

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/elysia-go/elysia/mcpendpoint/internal/jsonrpc"
)

// Registry bounds.
const (
	// MaxPerSession bounds a session's streams; past it Open refuses.
	MaxPerSession = 64
	// writeTimeout bounds each write to a stream's client.
	writeTimeout = 10 * time.Second
	// maxForwardBatch bounds the messages of one Forward send in bytes;
	// one larger message goes alone.
	maxForwardBatch = 1 << 20
	// DefaultKeepalive is Registry.Keepalive when it is zero.
	DefaultKeepalive = 15 * time.Second
	// primeDelay is how long the priming event may wait to go out with
	// the call's first message: a quick call's answer then leaves in one
	// write with it.
	primeDelay = 5 * time.Millisecond
)

// Registry is the streams of one endpoint, by id. Set ResumeWait (and
// Logger) before use; the zero value is otherwise ready. Its methods are
// safe for concurrent use.
type Registry struct {
	// ResumeWait is how long a stream nobody reads is kept before it is
	// forgotten and its call cancelled.
	ResumeWait time.Duration
	// Keepalive is how often Forward sends an empty batch while the
	// stream is silent, so that its reader elsewhere can tell a silent
	// call from a gone replica. Zero means DefaultKeepalive.
	Keepalive time.Duration
	// Logger receives a warning when a stream's reader is past messages
	// it had not read (ErrEventsDropped). Nil means nothing is logged.
	Logger *slog.Logger
	// now is the clock of the orphan timers; nil means time.Now. Tests
	// set it to show a process that stood still.
	now func() time.Time

	// mu guards byID, perSession and closed.
	mu         sync.Mutex
	byID       map[string]*Stream
	perSession map[string]int
	closed     bool
	// wg counts the goroutines of Go; Close waits for them.
	wg sync.WaitGroup
}

// Open registers a new stream of session sid and user whose call cancel
// ends, or returns nil when the session has MaxPerSession streams already
// or the Registry is closed.
func (r *Registry) Open(sid, user string, cancel context.CancelFunc) *Stream {
	st := &Stream{id: newID(), session: sid, user: user, cancel: cancel, wake: make(chan struct{})}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.perSession[sid] >= MaxPerSession {
		return nil
	}
	if r.byID == nil {
		r.byID, r.perSession = map[string]*Stream{}, map[string]int{}
	}
	r.byID[st.id] = st
	r.perSession[sid]++
	return st
}

// Get returns stream id of session sid and user, or nil.
func (r *Registry) Get(id, sid, user string) *Stream {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.byID[id]
	if st == nil || st.session != sid || st.user != user {
		return nil
	}
	return st
}

// Lookup returns stream id if sessionOK accepts its session, or nil.
func (r *Registry) Lookup(id string, sessionOK func(sid string) bool) *Stream {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.byID[id]
	if st == nil || !sessionOK(st.session) {
		return nil
	}
	return st
}

// Go runs f on a goroutine that Close waits for, unless the Registry is
// closed; it reports whether it did.
func (r *Registry) Go(f func()) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.wg.Go(f)
	return true
}

// Forget drops st, cancels its call if it still runs, and stops its
// readers.
func (r *Registry) Forget(st *Stream) {
	r.mu.Lock()
	if r.byID[st.id] == st {
		delete(r.byID, st.id)
		if r.perSession[st.session]--; r.perSession[st.session] <= 0 {
			delete(r.perSession, st.session)
		}
	}
	r.mu.Unlock()
	st.cancel()
	st.End()
}

// EndSession forgets the streams of session sid.
func (r *Registry) EndSession(sid string) {
	r.mu.Lock()
	var gone []*Stream
	for _, st := range r.byID {
		if st.session == sid {
			gone = append(gone, st)
		}
	}
	r.mu.Unlock()
	for _, st := range gone {
		r.Forget(st)
	}
}

// Close forgets every stream and waits for the goroutines of Go; Open
// refuses from then on.
func (r *Registry) Close() {
	r.mu.Lock()
	r.closed = true
	all := make([]*Stream, 0, len(r.byID))
	for _, st := range r.byID {
		all = append(all, st)
	}
	r.mu.Unlock()
	for _, st := range all {
		r.Forget(st)
	}
	r.wg.Wait()
}

// Leave ends reader n's turn: when nobody reads st any more it is
// forgotten, and its call cancelled, after ResumeWait unless a client
// takes it up again.
func (r *Registry) Leave(st *Stream, n int) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.reader != n {
		return // another connection reads it now
	}
	st.reader = 0
	if st.mirror || st.gone {
		return // the replica that holds it keeps it
	}
	st.leftAt = r.clock()
	if st.orphan != nil {
		st.orphan.Reset(r.ResumeWait)
		return
	}
	st.orphan = time.AfterFunc(r.ResumeWait, func() { r.orphaned(st) })
}

// stallSlack is how much later than due an orphan timer may fire before
// the process is taken to have stood still meanwhile.
const stallSlack = time.Second

// orphaned forgets st, which nobody took up within ResumeWait, unless the
// timer fired much later than due: this process stood still meanwhile
// (SIGSTOP, a VM paused, a long stall), and the clients' resumes sent in
// that time are still queued behind the timer, here or on the Relay. A
// slow replica is not a gone reader: st then gets a whole ResumeWait from
// now.
func (r *Registry) orphaned(st *Stream) {
	st.mu.Lock()
	if now := r.clock(); st.reader == 0 && now.Sub(st.leftAt) > r.ResumeWait+stallSlack {
		st.leftAt = now
		st.orphan.Reset(r.ResumeWait)
		st.mu.Unlock()
		return
	}
	st.mu.Unlock()
	r.Forget(st)
}

// clock returns the time of the orphan timers.
func (r *Registry) clock() time.Time {
	if r.now != nil {
		return r.now()
	}
	return time.Now()
}

// Start writes the headers of an event stream to w and sends them, so
// that a client resuming a silent call sees its stream open at once.
// Resume calls it itself: once it has, a resume can no longer be refused.
func Start(w http.ResponseWriter) {
	writeHeader(w)
	_ = http.NewResponseController(w).Flush() // a gone client: Serve finds out
}

// writeHeader sets the headers of an event stream on w, unsent.
func writeHeader(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
}

// ServeNew starts st's event stream on w, the connection of the request
// that made the call: the headers, the priming event, then Serve from the
// start.
func (r *Registry) ServeNew(ctx context.Context, w http.ResponseWriter, st *Stream, poll time.Duration) {
	writeHeader(w) // sent with the priming event
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Now().Add(writeTimeout)) // not every writer has deadlines
	if st.prime(w) != nil {
		r.Leave(st, st.Take())
		return
	}
	r.serve(ctx, w, st, 0, poll, true)
}

// Resume answers a client that takes st up again after seq, the seq of
// its Last-Event-ID. If the message after seq is gone (ErrEventsDropped),
// the client cannot have the whole call: Resume answers 410 Gone with a
// plain message that names the stream and the first event still kept,
// leaves the stream to its current reader or its orphan timer (the
// client may call again), and returns an error that wraps
// ErrEventsDropped, for the caller to log. Otherwise it starts the event
// stream at once (Start), Serves it, and returns nil once Serve is done.
func (r *Registry) Resume(ctx context.Context, w http.ResponseWriter, st *Stream, seq int, poll time.Duration) error {
	// Checked before Take, so that a refused client does not push the
	// current reader off. Messages dropped between here and Serve are
	// Serve's to mark.
	if evs, _, _, _, err := st.Since(seq, 0); err != nil {
		first := evs[0].Seq
		http.Error(w, fmt.Sprintf("Last-Event-ID %s-%d: the events after it were dropped (a call's stream keeps only its newest %d MiB); the first still kept is %s-%d: make the call again",
			st.id, seq, MaxBytes>>20, st.id, first), http.StatusGone)
		return fmt.Errorf("resume after event %d, first kept %d: %w", seq, first, err)
	}
	Start(w)
	r.serve(ctx, w, st, seq, poll, false)
	return nil
}

// Serve writes st's messages after seq to w until the answer is written,
// ctx ends (the client went), another connection takes the stream, or
// poll (when not 0) has passed, and then leaves it (Leave). w's event
// stream must be started (Start), so a reader past messages it had not
// read can no longer be refused: Serve writes what is kept after an SSE
// comment that marks the gap, and logs it. Resume refuses a client whose
// resume is past a gap instead; prefer it.
func (r *Registry) Serve(ctx context.Context, w http.ResponseWriter, st *Stream, seq int, poll time.Duration) {
	r.serve(ctx, w, st, seq, poll, false)
}

// serve is Serve; unflushed says w holds a priming event not yet flushed,
// which goes out with the first message or after primeDelay.
func (r *Registry) serve(ctx context.Context, w http.ResponseWriter, st *Stream, seq int, poll time.Duration, unflushed bool) {
	n := st.Take()
	defer r.Leave(st, n)
	var polled <-chan time.Time
	if poll > 0 {
		t := time.NewTimer(poll)
		defer t.Stop()
		polled = t.C
	}
	var prime <-chan time.Time
	if unflushed {
		t := time.NewTimer(primeDelay)
		defer t.Stop()
		prime = t.C
	}
	rc := http.NewResponseController(w)
	for {
		// A gap (ErrEventsDropped) shows in the seqs below, with those a
		// mirror's holder failed to relay.
		evs, done, wake, current, _ := st.Since(seq, n)
		if !current {
			return
		}
		if len(evs) > 0 {
			_ = rc.SetWriteDeadline(time.Now().Add(writeTimeout)) // not every writer has deadlines
			for _, ev := range evs {
				if ev.Seq > seq+1 { // headers are out: the client gets the rest, the gap marked
					r.logGap(ctx, st, seq, ev.Seq)
					if st.gap(w, seq, ev.Seq) != nil {
						return
					}
				}
				if st.frame(w, ev) != nil {
					return
				}
				seq = ev.Seq
			}
			if rc.Flush() != nil {
				return
			}
			prime = nil // out with them
		}
		if done {
			return // the orphan timer forgets the stream after ResumeWait
		}
		select {
		case <-wake:
		case <-prime:
			if rc.Flush() != nil {
				return
			}
			prime = nil
		case <-ctx.Done():
			return
		case <-polled:
			return
		}
	}
}

// Forward reads st for a reader elsewhere, from the event after seq on:
// it hands the messages to send, in batches of at most about 1 MiB, the
// first one (maybe empty) at once and an empty one every Keepalive while
// the stream is silent, until the answer is sent, another connection
// takes the stream (send gets gone), or stop closes. An answer send
// cannot carry is replaced by a JSON-RPC error that says so.
func (r *Registry) Forward(st *Stream, seq int, send func(evs []Event, gone bool) bool, stop <-chan struct{}) {
	n := st.Take()
	defer r.Leave(st, n)
	keepalive := time.NewTicker(r.keepalive())
	defer keepalive.Stop()
	first := true
	for {
		// A gap (ErrEventsDropped) goes on as it is: the mirror there sees
		// it in the seqs and tells its reader.
		evs, done, wake, current, _ := st.Since(seq, n)
		if !current {
			send(nil, true)
			return
		}
		for len(evs) > 0 || first {
			var batch []Event
			size := 0
			for len(evs) > 0 && (len(batch) == 0 || size+len(evs[0].Data) <= maxForwardBatch) {
				batch = append(batch, evs[0])
				size += len(evs[0].Data)
				seq = evs[0].Seq
				evs = evs[1:]
			}
			if !send(batch, false) && len(batch) > 0 && batch[len(batch)-1].Final {
				last := batch[len(batch)-1]
				send([]Event{{Seq: last.Seq, Data: ErrorAnswer(last.Data, "the answer could not be relayed from the replica that ran the call: call again"), Final: true}}, false)
			}
			first = false
		}
		if done {
			return
		}
		select {
		case <-wake:
		case <-keepalive.C:
			send(nil, false) // lost or not, the next one comes
		case <-stop:
			return
		}
	}
}

// logGap logs that st's reader, after seq, is past messages up to next
// that it never got. Stream ids are bearers: the log names the session by
// a hash.
func (r *Registry) logGap(ctx context.Context, st *Stream, seq, next int) {
	if r.Logger == nil {
		return
	}
	sum := sha256.Sum256([]byte(st.session))
	r.Logger.WarnContext(ctx, "MCP call stream reader missed dropped events", "session_hash", hex.EncodeToString(sum[:8]),
		"after_event", seq, "next_event", next, "mirror", st.mirror)
}

// keepalive is Keepalive, or DefaultKeepalive.
func (r *Registry) keepalive() time.Duration {
	if r.Keepalive > 0 {
		return r.Keepalive
	}
	return DefaultKeepalive
}

// MirrorSilence is how long a mirror may hear nothing from the replica
// forwarding its stream (which sends at least every Keepalive) before its
// reader gives that replica up.
func (r *Registry) MirrorSilence() time.Duration { return 3 * r.keepalive() }

// ParseEventID splits an event id of a stream, "<stream id>-<seq>"; ok
// is false for an id of another kind.
func ParseEventID(s string) (id string, seq int, ok bool) {
	id, seqText, found := strings.Cut(s, "-")
	seq, err := strconv.Atoi(seqText)
	if !found || len(id) != IDLen || err != nil || seq < 0 {
		return "", 0, false
	}
	return id, seq, true
}

// ErrorAnswer is a JSON-RPC error answer (internal error), with msg, to
// the request that answer (a JSON-RPC message, or only its id) answers.
func ErrorAnswer(answer json.RawMessage, msg string) json.RawMessage {
	id := answer // the id itself
	if m, ok := jsonrpc.Decode(answer); ok {
		id = m.ID
	}
	return jsonrpc.ErrorResponse(id, -32603, msg, nil)
}
