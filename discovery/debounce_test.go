package discovery

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func TestDebouncerCoalescesBursts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		b := newDebouncer(100*time.Millisecond, func() { calls.Add(1) })
		for range 20 {
			b.Trigger()
			time.Sleep(30 * time.Millisecond) // inside the bubble: fake time
		}
		synctest.Wait()
		if got := calls.Load(); got != 0 {
			t.Fatalf("called %d times during the burst, want 0", got)
		}
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		if got := calls.Load(); got != 1 {
			t.Fatalf("called %d times after the burst, want 1", got)
		}
	})
}

func TestDebouncerStopCancels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		b := newDebouncer(time.Second, func() { calls.Add(1) })
		b.Trigger()
		b.Stop()
		b.Trigger()
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if got := calls.Load(); got != 0 {
			t.Fatalf("called %d times after Stop, want 0", got)
		}
	})
}
