// Package streamrelay keeps the reads of call streams across the replicas
// of the MCP endpoint: the mirrors read here of streams that other
// replicas hold, by reader, with what the replicas said of them, and the
// forwards this replica runs of its own streams for readers elsewhere.
//
// A client's resume of a stream this replica does not hold gets a Mirror
// (Table.Add) under a new reader id; the holder's batches of events feed
// it (Mirror.Receive), the other replicas' word that the stream is not
// theirs is counted (Mirror.Absent), and Mirror.Silent tells a holder that
// stopped sending. On the holder, Table.Forward runs one forward per
// reader until its reader leaves (Table.StopForward). It knows nothing of
// how the replicas send each other messages.
package streamrelay

import (
	"crypto/rand"
	"encoding/hex"
	"sync"
	"sync/atomic"
	"time"

	"github.com/elysia-go/elysia/mcpendpoint/internal/callstream"
)

// maxAbsent is how many replicas' word that they do not hold a stream a
// Mirror keeps unread; Absent drops more.
const maxAbsent = 16

// Table is the reads of call streams across replicas: the mirrors here
// and the forwards for readers elsewhere, each by reader. Its zero value
// is ready; it is safe for concurrent use.
type Table struct {
	// mu guards mirrors and forwards.
	mu sync.Mutex
	// mirrors are other replicas' streams read here, by reader.
	mirrors map[string]*Mirror
	// forwards stop the reads of streams here for other replicas, by
	// reader.
	forwards map[string]chan struct{}
}

// Mirror is the asking side of a resume across replicas: a mirror stream
// (callstream.NewMirror) that the replica holding the stream feeds.
type Mirror struct {
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

// Add registers a mirror of st, a mirror stream (callstream.NewMirror),
// under a new random reader id, and returns both. Remove unregisters it.
func (t *Table) Add(st *callstream.Stream) (reader string, m *Mirror) {
	var raw [8]byte
	_, _ = rand.Read(raw[:]) // crypto/rand.Read never fails
	reader = hex.EncodeToString(raw[:])
	m = &Mirror{st: st, heard: make(chan struct{}), absent: make(chan string, maxAbsent)}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.mirrors == nil {
		t.mirrors = map[string]*Mirror{}
	}
	t.mirrors[reader] = m
	return reader, m
}

// Remove unregisters the mirror of reader.
func (t *Table) Remove(reader string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.mirrors, reader)
}

// Mirror returns the mirror of reader here, if it reads stream id.
func (t *Table) Mirror(reader, id string) *Mirror {
	t.mu.Lock()
	defer t.mu.Unlock()
	if m := t.mirrors[reader]; m != nil && m.st.ID() == id {
		return m
	}
	return nil
}

// EndMirrors ends the streams of other replicas read here: their clients
// resume them elsewhere.
func (t *Table) EndMirrors() {
	t.mu.Lock()
	mirrors := make([]*Mirror, 0, len(t.mirrors))
	for _, m := range t.mirrors {
		mirrors = append(mirrors, m)
	}
	t.mu.Unlock()
	for _, m := range mirrors {
		m.st.End()
	}
}

// Forward starts the forward of a stream here to reader, a mirror on
// another replica, unless one to reader runs already: start runs a
// function on a goroutine (or reports false, and the forward does not
// start), on which forward reads the stream until stop closes
// (StopForward, StopForwards) or it is done. The forward is registered
// until forward returns.
func (t *Table) Forward(reader string, start func(func()) bool, forward func(stop <-chan struct{})) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.forwards[reader] != nil {
		return
	}
	stop := make(chan struct{})
	started := start(func() {
		defer func() {
			t.mu.Lock()
			delete(t.forwards, reader)
			t.mu.Unlock()
		}()
		forward(stop)
	})
	if started {
		if t.forwards == nil {
			t.forwards = map[string]chan struct{}{}
		}
		t.forwards[reader] = stop
	}
}

// StopForward stops the forward to reader, whose client left.
func (t *Table) StopForward(reader string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if stop := t.forwards[reader]; stop != nil {
		close(stop)
		delete(t.forwards, reader)
	}
}

// StopForwards stops the reads of streams here for other replicas.
func (t *Table) StopForwards() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for reader, stop := range t.forwards {
		close(stop)
		delete(t.forwards, reader)
	}
}

// Stream returns m's mirror stream.
func (m *Mirror) Stream() *callstream.Stream { return m.st }

// Heard returns a channel closed when the holder first answers (Receive).
func (m *Mirror) Heard() <-chan struct{} { return m.heard }

// Receive adds a batch of events the holder forwarded to m's stream,
// those it has already aside, and ends the stream if gone says the holder
// stopped forwarding. An empty batch, too, says the holder is there.
func (m *Mirror) Receive(evs []callstream.Event, gone bool) {
	m.last.Store(time.Now().UnixNano())
	for _, ev := range evs {
		m.st.AddAt(ev.Seq, ev.Data, ev.Final)
	}
	if gone {
		m.st.End()
	}
	m.once.Do(func() { close(m.heard) })
}

// Absent counts the word of the replica tagged tag that it does not hold
// m's stream; past maxAbsent unread ones it is dropped.
func (m *Mirror) Absent(tag string) {
	select {
	case m.absent <- tag:
	default:
	}
}

// Absences returns the channel of the tags Absent counted.
func (m *Mirror) Absences() <-chan string { return m.absent }

// Silent waits until the holder has been silent for longer than silence
// and reports true, or until stop closes and reports false; it looks
// every third of silence. Call it once Heard is closed: until the holder
// answers, it has been silent for ever.
func (m *Mirror) Silent(silence time.Duration, stop <-chan struct{}) bool {
	t := time.NewTicker(silence / 3)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return false
		case <-t.C:
		}
		if time.Since(time.Unix(0, m.last.Load())) > silence {
			return true
		}
	}
}
