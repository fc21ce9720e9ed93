package sse

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/elysia-go/elysia/tools"
)

// stream writes a query's worth of events on a new Writer, some back to
// back in one flush, and returns what the client got.
func stream(tb testing.TB, step, long tools.Envelope) string {
	tb.Helper()
	rec := httptest.NewRecorder()
	c, _ := gin.CreateTestContext(rec)
	w := NewWriter(c.Writer, time.Second)
	for i := range 12 {
		w.Add(step)
		if i%3 == 0 {
			w.Add(long)
		}
		if err := w.Flush(); err != nil {
			tb.Fatal(err)
		}
	}
	return rec.Body.String()
}

// envelope is a status event of text.
func envelope(tb testing.TB, text string) tools.Envelope {
	tb.Helper()
	env, err := tools.NewEnvelope(tools.NewStatus(text), "alice", "c1", "q1")
	if err != nil {
		tb.Fatal(err)
	}
	return env
}

// TestWriterSendsEachEventOnce: every event added goes out once, as one
// data message, in order, with the stream's headers.
func TestWriterSendsEachEventOnce(t *testing.T) {
	gin.SetMode(gin.TestMode)
	step, long := envelope(t, "step"), envelope(t, strings.Repeat("a result's text ", 40))
	got := stream(t, step, long)
	msgs := strings.Split(strings.TrimSuffix(got, "\n\n"), "\n\n")
	if len(msgs) != 16 {
		t.Fatalf("%d messages, want 16:\n%s", len(msgs), got)
	}
	for i, m := range msgs {
		if !strings.HasPrefix(m, `data: {`) || !strings.Contains(m, `"type":"status"`) || strings.Count(m, "data: ") != 1 {
			t.Errorf("message %d: %q", i, m)
		}
	}
	if again := stream(t, step, long); again != got {
		t.Errorf("a second stream (on a pooled buffer) differs:\n%s\nwant\n%s", again, got)
	}
}

// TestWriterBuffersAreReused: a stream's events are gathered in a buffer
// taken from a pool and given back at each flush, not one grown per
// stream.
func TestWriterBuffersAreReused(t *testing.T) {
	if raceEnabled {
		t.Skip("under -race sync.Pool drops what is put back at random: allocation counts vary (run without -race)")
	}
	gin.SetMode(gin.TestMode)
	env := envelope(t, strings.Repeat("x", 2000))
	stream(t, env, env) // fills the pool
	rec := httptest.NewRecorder()
	c, _ := gin.CreateTestContext(rec)
	run := func(events int) float64 {
		return testing.AllocsPerRun(100, func() {
			w := NewWriter(c.Writer, time.Second)
			for range events {
				w.Add(env)
			}
			_ = w.Flush()
			rec.Body.Reset()
		})
	}
	buf := make([]byte, 0, 8<<10)
	encode := testing.AllocsPerRun(100, func() { buf, _ = tools.AppendEnvelope(buf[:0], env) })
	// Two more events, in the same flush, cost their encoding's
	// allocations and no more: a buffer grown per stream would cost two or
	// three more.
	if extra := run(3) - run(1); extra > 2*encode {
		t.Errorf("two more 2 KB events cost %.0f allocations; want %.0f, their encoding's", extra, 2*encode)
	}
}

// BenchmarkWriterStream is a query's stream of events on a new Writer.
func BenchmarkWriterStream(b *testing.B) {
	gin.SetMode(gin.TestMode)
	step, long := envelope(b, "step"), envelope(b, strings.Repeat("a result's text ", 40))
	b.ReportAllocs()
	for b.Loop() {
		stream(b, step, long)
	}
}
