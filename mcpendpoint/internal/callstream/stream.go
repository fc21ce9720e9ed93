// Package callstream keeps the resumable event streams (SEP-1699) of the
// calls the aggregate MCP endpoint answers: each call's messages with
// their ids, who reads them now, and how long a call nobody reads is kept.
//
// A Registry holds the streams of one endpoint. Open registers a call's
// Stream, the call's messages go onto it with Add (the answer last),
// Registry.ServeNew writes them to the call's own connection and
// Registry.Resume to that of a client that resumes the stream (refusing
// one whose next messages were dropped: ErrEventsDropped), and
// Registry.Leave starts the wait after which a stream nobody reads is
// forgotten and its call cancelled. A Writer is the http.ResponseWriter a
// server library answers a call on: it turns what it writes into the
// stream's messages. A stream held by another replica is read here
// through a mirror (NewMirror, AddAt) that Registry.Forward feeds there.
// It knows nothing of MCP beyond JSON-RPC's shapes.
package callstream

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/elysia-go/elysia/mcpendpoint/internal/sse"
)

// Bounds of a stream.
const (
	// Retry is the retry interval a priming event asks for: how long a
	// client waits before it resumes a stream that closed.
	Retry = 500 * time.Millisecond
	// MaxBytes bounds the messages a stream keeps for its reader: past it
	// the oldest progress and log messages are dropped, never the answer,
	// and a reader that had not read them is told (ErrEventsDropped).
	MaxBytes = 4 << 20
	// IDLen is the length of a stream id: 16 random bytes in hex.
	IDLen = 32
)

// Event is one message of a stream, its Seq counting from 1.
type Event struct {
	Seq   int
	Data  []byte
	Final bool // the answer
}

// Stream is the stream of one call: its messages, and who reads them now.
// Its methods are safe for concurrent use.
type Stream struct {
	id, session, user string
	// cancel ends the call.
	cancel context.CancelFunc
	// mirror marks another replica's stream, read here.
	mirror bool

	// mu guards everything below.
	mu     sync.Mutex
	events []Event
	bytes  int
	seq    int
	done   bool // the answer is in events
	gone   bool // forgotten: nobody may read it any more
	// wake is closed (and replaced) when an event is added or the reader
	// changes.
	wake chan struct{}
	// reader counts the connections that took the stream; the one whose
	// number it is reads it now, 0 when none does.
	reader, readers int
	// orphan forgets the stream (cancelling its call) when nobody reads
	// it for the Registry's ResumeWait.
	orphan *time.Timer
	// leftAt is when its last reader left, for the orphan timer.
	leftAt time.Time
}

// NewMirror returns a stream of another replica's, id, to read here from
// the event after seq on; AddAt fills it.
func NewMirror(id, session, user string, seq int) *Stream {
	return &Stream{id: id, session: session, user: user, cancel: func() {}, mirror: true, seq: seq, wake: make(chan struct{})}
}

// ID is the stream's id, the part before the "-" of its event ids.
func (st *Stream) ID() string { return st.id }

// Session is the MCP session of the stream's call.
func (st *Stream) Session() string { return st.session }

// Add appends a message (the answer when final) and wakes the reader.
// Past MaxBytes the oldest messages that are not the answer are dropped:
// progress a stalled reader would see late anyway, told of the gap (see
// Since). Nothing is added after the answer. The stream keeps data and
// hands it to its readers: the caller must not change it afterwards.
func (st *Stream) Add(data []byte, final bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.addLocked(st.seq+1, data, final)
}

// AddAt adds a message of another replica's stream under its own seq,
// unless the stream has it already.
func (st *Stream) AddAt(seq int, data []byte, final bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if seq > st.seq {
		st.addLocked(seq, data, final)
	}
}

// addLocked adds a message as seq; st.mu must be held.
func (st *Stream) addLocked(seq int, data []byte, final bool) {
	if st.done || st.gone {
		return
	}
	data = bytes.TrimRight(data, "\r\n") // an encoder's newline
	st.seq = seq
	st.events = append(st.events, Event{Seq: st.seq, Data: data, Final: final})
	st.bytes += len(data)
	for st.bytes > MaxBytes && len(st.events) > 1 && !st.events[0].Final {
		// Readers hold copies (Since), so the dropped event can be zeroed
		// for its data to be collected, and the slice cut from the front:
		// append moves what is left to a new array once it runs out of
		// room, which keeps trimming O(1) amortised.
		st.bytes -= len(st.events[0].Data)
		st.events[0] = Event{}
		st.events = st.events[1:]
	}
	st.done = final
	st.signal()
}

// signal wakes whoever waits on wake; st.mu must be held.
func (st *Stream) signal() {
	close(st.wake)
	st.wake = make(chan struct{})
}

// End marks st gone and wakes its readers, who stop.
func (st *Stream) End() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.gone = true
	st.signal()
}

// Take makes the caller the stream's reader, in place of any other, and
// returns its number.
func (st *Stream) Take() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.readers++
	st.reader = st.readers
	if st.orphan != nil {
		st.orphan.Stop()
	}
	st.signal() // a reader it replaces steps down
	return st.reader
}

// Since returns a copy of the messages the stream keeps after seq,
// whether the answer is among them, the channel that says more came, and
// whether reader n still reads the stream. The copy is the reader's: the
// stream never changes it. When the message right after seq is gone
// (dropped past MaxBytes, or on a mirror never relayed), err is
// ErrEventsDropped and evs, which then starts at the first message kept,
// is valid all the same.
func (st *Stream) Since(seq, n int) (evs []Event, done bool, wake <-chan struct{}, current bool, err error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	i, _ := slices.BinarySearchFunc(st.events, seq+1, func(ev Event, s int) int { return ev.Seq - s })
	// Events are copied, not their Data: nothing changes a message's bytes
	// once added (Add).
	evs = slices.Clone(st.events[i:])
	// A stream's seqs count up by one; a mirror's may only skip what its
	// holder could not give it.
	if len(evs) > 0 && evs[0].Seq > seq+1 {
		err = ErrEventsDropped
	}
	return evs, st.done, st.wake, st.reader == n && !st.gone, err
}

// gap writes an SSE comment to w that says the messages after seq, up to
// next, were dropped: a client's library skips it, someone reading the
// wire sees why the ids jump.
func (st *Stream) gap(w io.Writer, seq, next int) error {
	why := fmt.Sprintf("it keeps only its newest %d MiB", MaxBytes>>20)
	if st.mirror {
		why = "the replica running the call dropped them or could not relay them"
	}
	_, err := fmt.Fprintf(w, ": events %d to %d of this stream were dropped: %s\n", seq+1, next-1, why)
	return err
}

// frame writes ev as an SSE event with its id, a data line for each line
// of its message.
func (st *Stream) frame(w io.Writer, ev Event) error {
	return sse.Write(w, sse.Event{Name: "message", ID: st.id + "-" + strconv.Itoa(ev.Seq), Data: ev.Data})
}

// prime writes the priming event: an id to resume from, the retry
// interval, no data.
func (st *Stream) prime(w io.Writer) error {
	return sse.Write(w, sse.Event{ID: st.id + "-0", Retry: Retry})
}

// newID returns a fresh random stream id.
func newID() string {
	var raw [IDLen / 2]byte
	_, _ = rand.Read(raw[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(raw[:])
}
