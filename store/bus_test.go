package store

import (
	"bytes"
	"database/sql"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/elysia-go/elysia/internal/testenv"
)

// startBus returns a started Bus of s whose messages arrive on the
// returned channel, closed when t ends.
func startBus(t *testing.T, s *Store) (*Bus, <-chan []byte) {
	t.Helper()
	b, err := s.NewBus()
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 64)
	if err := b.Start(func(msg []byte) { got <- msg }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() }) // Close never fails
	return b, got
}

// next returns the next message of got, failing after 10 s.
func next(t *testing.T, got <-chan []byte, what string) []byte {
	t.Helper()
	select {
	case m := <-got:
		return m
	case <-time.After(10 * time.Second):
		t.Fatalf("no message: %s", what)
		return nil
	}
}

// quiet fails when got delivers within d.
func quiet(t *testing.T, got <-chan []byte, d time.Duration, what string) {
	t.Helper()
	select {
	case m := <-got:
		t.Errorf("%s: got %.60q", what, m)
	case <-time.After(d):
	}
}

func TestBusBetweenProcesses(t *testing.T) {
	t.Parallel()
	dsn := testenv.PostgresDSN(t)
	a, b := openStore(t, dsn), openStore(t, dsn)
	if bus, _ := a.NewBus(); bus.Listening() {
		t.Error("a Bus not started says it listens")
	}
	busA, gotA := startBus(t, a)
	busB, gotB := startBus(t, b)
	_, gotOther := startBus(t, openStore(t, testenv.PostgresDSN(t))) // another schema: another service

	big := bytes.Repeat([]byte("x"), 100_000) // far over NOTIFY's 8000 bytes
	// The first message may go before B listens: send until one arrives.
	testenv.WaitFor(t, 10*time.Second, "B to get A's message", func() bool {
		if err := busA.Publish([]byte("hello")); err != nil {
			t.Fatal(err)
		}
		select {
		case m := <-gotB:
			if string(m) != "hello" {
				t.Fatalf("B got %q, want hello", m)
			}
			return true
		case <-time.After(100 * time.Millisecond):
			return false
		}
	})
	if err := busA.Publish(big); err != nil {
		t.Fatal(err)
	}
	if err := busA.Publish([]byte("after")); err != nil {
		t.Fatal(err)
	}
	m := next(t, gotB, "the large message")
	for string(m) == "hello" { // the other tries of the first message
		m = next(t, gotB, "the large message")
	}
	if !bytes.Equal(m, big) {
		t.Errorf("B got %d bytes, want the %d sent", len(m), len(big))
	}
	if m := next(t, gotB, "the message after"); string(m) != "after" {
		t.Errorf("B got %.60q, want after", m)
	}
	if err := busB.Publish([]byte("from B")); err != nil {
		t.Fatal(err)
	}
	if m := next(t, gotA, "B's message"); string(m) != "from B" {
		t.Errorf("A got %q", m)
	}
	quiet(t, gotA, 300*time.Millisecond, "A got its own message")
	quiet(t, gotOther, 0, "another schema's bus got a message")

	if err := busA.Publish(make([]byte, MaxBusMessage+1)); err == nil {
		t.Error("a message over MaxBusMessage was taken")
	}
	if err := busA.Close(); err != nil {
		t.Fatal(err)
	}
	if err := busA.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := busA.Publish([]byte("late")); !errors.Is(err, ErrClosed) {
		t.Errorf("Publish after Close: %v, want ErrClosed", err)
	}
	if err := busA.Start(func([]byte) {}); !errors.Is(err, ErrClosed) {
		t.Errorf("Start after Close: %v, want ErrClosed", err)
	}
}

// TestBusReconnects: when the bus's session is killed, it connects again,
// tells its user that messages may have been missed (nil), and delivers
// the next ones.
func TestBusReconnects(t *testing.T) {
	t.Parallel()
	dsn := testenv.PostgresDSN(t)
	busA, _ := startBus(t, openStore(t, dsn))
	busB, gotB := startBus(t, openStore(t, dsn))
	admin, err := sql.Open("pgx", testenv.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Close() }) // nothing left to report

	kill := func() int {
		var n int
		err := admin.QueryRowContext(t.Context(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`,
			"elysia bus "+busB.instance).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	testenv.WaitFor(t, 10*time.Second, "B's bus to connect", func() bool { return kill() > 0 })
	if m := next(t, gotB, "the notice of a lost connection"); m != nil {
		t.Fatalf("B got %q after its connection was killed, want nil", m)
	}
	if !busB.Listening() {
		t.Error("B does not say it listens after it connected again")
	}
	if err := busA.Publish([]byte("again")); err != nil {
		t.Fatal(err)
	}
	if m := next(t, gotB, "a message after the reconnection"); string(m) != "again" {
		t.Errorf("B got %q, want again", m)
	}
}

func TestBusNeedsPostgres(t *testing.T) {
	t.Parallel()
	s := openStore(t, sqliteTestDSN(t))
	if _, err := s.NewBus(); !errors.Is(err, ErrNoBus) {
		t.Errorf("NewBus on SQLite: %v, want ErrNoBus", err)
	}
	if !strings.Contains(ErrNoBus.Error(), "SQLite") {
		t.Errorf("ErrNoBus = %q", ErrNoBus)
	}
}

// TestBusDeliversNothingOnceClosing closes a Bus while its goroutine has
// read a message and is about to deliver it: the message is dropped, so a
// receiver closed after its Bus is never handed a message (and never
// starts work for one, here a goroutine, as the MCP endpoint does for an
// unsubscribe) once the Bus's Close has begun. Not parallel: goleak looks
// at every goroutine of the process.
func TestBusDeliversNothingOnceClosing(t *testing.T) {
	dsn := testenv.PostgresDSN(t)
	a, b := openStore(t, dsn), openStore(t, dsn)
	busA, err := a.NewBus()
	if err != nil {
		t.Fatal(err)
	}
	reached, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	busA.beforeDeliver = func() {
		once.Do(func() {
			close(reached)
			<-release
		})
	}
	var delivered atomic.Int32
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	if err := busA.Start(func([]byte) {
		delivered.Add(1)
		go func() { <-stop }() // work the receiver starts for the message
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = busA.Close() }) // Close never fails
	busB, _ := startBus(t, b)
	testenv.WaitFor(t, 10*time.Second, "A to read B's message", func() bool {
		if err := busB.Publish([]byte("hello")); err != nil {
			t.Fatal(err)
		}
		select {
		case <-reached:
			return true
		case <-time.After(100 * time.Millisecond):
			return false
		}
	})

	before := goleak.IgnoreCurrent()
	closed := make(chan struct{})
	go func() {
		_ = busA.Close() // Close never fails
		close(closed)
	}()
	testenv.WaitFor(t, 10*time.Second, "A's Close to begin", func() bool {
		busA.mu.Lock()
		defer busA.mu.Unlock()
		return busA.closed
	})
	close(release)
	select {
	case <-closed:
	case <-time.After(20 * time.Second):
		t.Fatal("Close did not return")
	}
	if n := delivered.Load(); n != 0 {
		t.Errorf("%d messages delivered once Close had begun, want none", n)
	}
	goleak.VerifyNone(t, before)
}
