package callstream

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// wire is what a stream's body says, its data left out: each event's
// id, and each comment.
func wire(body string) []string {
	var out []string
	for line := range strings.SplitSeq(body, "\n") {
		if strings.HasPrefix(line, "id: ") || strings.HasPrefix(line, ": ") {
			out = append(out, line)
		}
	}
	return out
}

// newRegistry returns a Registry that logs to the returned buffer and is
// closed when t ends.
func newRegistry(t *testing.T) (*Registry, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	r := &Registry{ResumeWait: time.Minute, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	t.Cleanup(r.Close)
	return r, &logs
}

// TestResume: a resume after a dropped message is refused with 410 and
// the first id still kept, and leaves the stream's reader be; a resume
// after what is kept gets the rest.
func TestResume(t *testing.T) {
	r, logs := newRegistry(t)
	st := r.Open("s", "u", func() {})
	fill(st, 5)
	st.Add([]byte(`{"result":{}}`), true) // keeps 4 to 6
	id := st.ID()

	reader := st.Take() // the call's own connection, still there
	rec := httptest.NewRecorder()
	err := r.Resume(t.Context(), rec, st, 1, 0)
	if !errors.Is(err, ErrEventsDropped) || rec.Code != http.StatusGone {
		t.Errorf("resume after a dropped event: %d, %v; want 410 and ErrEventsDropped", rec.Code, err)
	}
	if body := rec.Body.String(); !strings.Contains(body, id+"-1") || !strings.Contains(body, "first still kept is "+id+"-4") {
		t.Errorf("the refusal %q does not name the resume and the first event kept", body)
	}
	if err != nil && strings.Contains(err.Error(), id) {
		t.Errorf("the error %q holds the stream id, a bearer", err)
	}
	if _, _, _, current, _ := st.Since(0, reader); !current {
		t.Error("a refused resume took the stream from its reader")
	}

	rec = httptest.NewRecorder()
	if err := r.Resume(t.Context(), rec, st, 3, 0); err != nil || rec.Code != http.StatusOK {
		t.Fatalf("resume right before what is kept: %d, %v", rec.Code, err)
	}
	want := []string{"id: " + id + "-4", "id: " + id + "-5", "id: " + id + "-6"}
	if got := wire(rec.Body.String()); !slices.Equal(got, want) {
		t.Errorf("resumed stream %q, want %q", got, want)
	}
	if logs.Len() != 0 {
		t.Errorf("logged %q", logs)
	}
}

// TestServeMarksGap: a reader whose stream is already being written and
// who is past dropped messages gets the rest after a comment that marks
// the gap, and the gap is logged; so is a mirror's gap within.
func TestServeMarksGap(t *testing.T) {
	r, logs := newRegistry(t)
	st := r.Open("s", "u", func() {})
	fill(st, 5)
	st.Add([]byte(`{"result":{}}`), true) // keeps 4 to 6
	mirror := NewMirror(strings.Repeat("a", IDLen), "s", "u", 3)
	mirror.AddAt(4, []byte(`{}`), false)
	mirror.AddAt(7, []byte(`{"result":{}}`), true) // 5 and 6 never relayed
	for _, tt := range []struct {
		name  string
		st    *Stream
		after int
		want  []string
	}{
		{"trimmed", st, 0, []string{
			": events 1 to 3 of this stream were dropped: it keeps only its newest 4 MiB",
			"id: " + st.ID() + "-4", "id: " + st.ID() + "-5", "id: " + st.ID() + "-6",
		}},
		{"mirror", mirror, 3, []string{
			"id: " + mirror.ID() + "-4",
			": events 5 to 6 of this stream were dropped: the replica running the call dropped them or could not relay them",
			"id: " + mirror.ID() + "-7",
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			logs.Reset()
			rec := httptest.NewRecorder()
			Start(rec)
			r.Serve(t.Context(), rec, tt.st, tt.after, 0)
			if got := wire(rec.Body.String()); !slices.Equal(got, tt.want) {
				t.Errorf("served %q, want %q", got, tt.want)
			}
			if got := logs.String(); !strings.Contains(got, "missed dropped events") || strings.Contains(got, tt.st.ID()) {
				t.Errorf("logged %q, want the gap without the stream id", got)
			}
		})
	}
}

// TestOrphanTimerSparesAStalledProcess: a stream nobody reads is forgotten,
// and its call cancelled, ResumeWait after its reader left; but when the
// timer fires much later than that, the process stood still meanwhile
// (its clients' resumes may be queued behind the timer), and the stream
// gets a whole ResumeWait more.
func TestOrphanTimerSparesAStalledProcess(t *testing.T) {
	// The orphan timer's clock: the reader leaves at t0, the first firing
	// sees 20 s more than it waited (a 20 s SIGSTOP), and from then on the
	// clock runs on time.
	var calls atomic.Int32
	t0 := time.Now()
	now := func() time.Time {
		if calls.Add(1) == 1 {
			return t0
		}
		return time.Now().Add(20 * time.Second)
	}
	r := &Registry{ResumeWait: 20 * time.Millisecond, now: now}
	t.Cleanup(r.Close)
	cancelled := make(chan struct{})
	st := r.Open("s1", "alice", func() { close(cancelled) })
	r.Leave(st, st.Take())
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the stream was never forgotten")
	}
	if n := calls.Load(); n < 3 {
		t.Errorf("the stream was forgotten at the timer's %d reading of the clock: the late firing did not give it another wait", n-1)
	}
}
