package web

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/elysia-go/elysia/tree"
)

// TestStoreOutageIs503 maps an error of an unavailable store to 503 with
// a plain message, even when it also says the conversation was busy (the
// lock could not be taken because the database is down): the driver's
// detail, which names the database's user, host and port, is not shown.
func TestStoreOutageIs503(t *testing.T) {
	detail := fmt.Errorf("failed to connect to `user=elysia database=elysia_test`: 127.0.0.1:51722: dial: connection refused: %w", tree.ErrStoreUnavailable)
	for name, err := range map[string]error{
		"read":  fmt.Errorf("get conversation alice/c1: %w", detail),
		"lock":  fmt.Errorf("conversation alice/c1 is busy with another query: %w: %w", tree.ErrBusy, detail),
		"save":  fmt.Errorf("save conversation alice/c1: %w", detail),
		"found": fmt.Errorf("conversation alice/c1: %w: %w", tree.ErrNotFound, detail),
	} {
		t.Run(name, func(t *testing.T) {
			status := statusOf(err)
			if status != http.StatusServiceUnavailable {
				t.Errorf("status %d, want 503", status)
			}
			msg := publicMessage(t.Context(), status, err)
			if !strings.HasPrefix(msg, "the database is unavailable; try again shortly") {
				t.Errorf("message %q, want the database is unavailable", msg)
			}
			for _, secret := range []string{"elysia_test", "user=", "127.0.0.1", "51722"} {
				if strings.Contains(msg, secret) {
					t.Errorf("message %q shows %q", msg, secret)
				}
			}
		})
	}
	if status := statusOf(fmt.Errorf("conversation alice/c1: %w", tree.ErrBusy)); status != http.StatusConflict {
		t.Errorf("a busy conversation: status %d, want 409", status)
	}
}

// TestReadyzBounded answers /readyz within its bound when the readiness
// check hangs (a frozen database): not ready.
func TestReadyzBounded(t *testing.T) {
	h := newHarness(t, &Options{Ready: func(ctx context.Context) error {
		<-ctx.Done()
		return ctx.Err()
	}})
	done := make(chan int, 1)
	start := time.Now()
	go func() { done <- h.do(t, "GET", "/readyz", "").Code }()
	select {
	case code := <-done:
		if code != http.StatusServiceUnavailable {
			t.Errorf("status %d, want 503", code)
		}
		if d := time.Since(start); d > readyTimeout+time.Second {
			t.Errorf("/readyz took %v, want about %v", d, readyTimeout)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("/readyz did not answer while the readiness check hung")
	}
}
