package store

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// TestMCPTasks: a task one Store creates is read and moved by another on
// the same database (a replica) for its user only; once ended it moves no
// more; past its expiry it is gone.
func TestMCPTasks(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			dsn := b.dsn(t)
			var now atomic.Int64
			start := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
			now.Store(start.UnixMicro())
			clock := func() time.Time { return time.UnixMicro(now.Load()) }
			a, r := openStore(t, dsn), openStore(t, dsn)
			a.clock, r.clock = clock, clock
			const id = "task-7f3c2a9e1b5d4c8f"
			if err := a.CreateMCPTask(ctx, id, "alice", start.Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
			if err := a.CreateMCPTask(ctx, id, "alice", start.Add(time.Hour)); err == nil {
				t.Error("a task id created twice: no error")
			}
			got, err := r.MCPTaskOf(ctx, id, "alice")
			if err != nil || got.Status != TaskWorking || !got.Created.Equal(start) || !got.Expires.Equal(start.Add(time.Hour)) {
				t.Fatalf("read on the replica: %+v, %v; want working, created %v", got, err, start)
			}
			if _, err := r.MCPTaskOf(ctx, id, "bob"); !errors.Is(err, ErrNotFound) {
				t.Errorf("alice's task read as bob: %v, want ErrNotFound", err)
			}
			if _, err := r.UpdateMCPTask(ctx, id, "bob", MCPTask{Status: TaskCancelled}); !errors.Is(err, ErrNotFound) {
				t.Errorf("alice's task cancelled by bob: %v, want ErrNotFound", err)
			}
			if _, err := r.UpdateMCPTask(ctx, id, "alice", MCPTask{Status: "paused"}); err == nil {
				t.Error("an unknown status: no error")
			}
			now.Add(int64(time.Second / time.Microsecond))
			ask := MCPTask{Status: TaskInputRequired, InputRequests: `{"q1":{"method":"elicitation/create"}}`}
			if moved, err := r.UpdateMCPTask(ctx, id, "alice", ask); err != nil || !moved {
				t.Fatalf("input_required: moved %v, %v", moved, err)
			}
			done := MCPTask{Status: TaskCompleted, Result: `{"content":[{"type":"text","text":"ok"}]}`}
			if moved, err := a.UpdateMCPTask(ctx, id, "alice", done); err != nil || !moved {
				t.Fatalf("completed: moved %v, %v", moved, err)
			}
			if moved, err := r.UpdateMCPTask(ctx, id, "alice", MCPTask{Status: TaskCancelled}); err != nil || moved {
				t.Errorf("a completed task cancelled: moved %v, %v; want not moved, no error", moved, err)
			}
			got, err = r.MCPTaskOf(ctx, id, "alice")
			if err != nil || got.Status != TaskCompleted || got.Result != done.Result || got.InputRequests != "" ||
				!got.Updated.Equal(start.Add(time.Second)) {
				t.Errorf("after the end: %+v, %v; want %+v updated a second later", got, err, done)
			}
			now.Add(int64(2 * time.Hour / time.Microsecond))
			if _, err := r.MCPTaskOf(ctx, id, "alice"); !errors.Is(err, ErrNotFound) {
				t.Errorf("an expired task read: %v, want ErrNotFound", err)
			}
			if err := a.CreateMCPTask(ctx, "task-other", "alice", clock().Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
			var n int
			if err := r.db.QueryRowContext(ctx, r.q(`SELECT COUNT(*) FROM mcp_tasks WHERE id_hash = ?`), hashHex(id)).Scan(&n); err != nil || n != 0 {
				t.Errorf("the expired task's rows after the next create: %d, %v; want 0", n, err)
			}
		})
	}
}

// TestSwapMCPTask: a swap moves a task only from the revision its caller
// read, answers and all, and only for its user.
func TestSwapMCPTask(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			dsn := b.dsn(t)
			a, r := openStore(t, dsn), openStore(t, dsn)
			const id = "task-swap-0a1b2c3d"
			if err := a.CreateMCPTask(ctx, id, "alice", time.Now().Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
			got, err := r.MCPTaskOf(ctx, id, "alice")
			if err != nil || got.Revision != 0 || got.Answers != "" {
				t.Fatalf("new task: %+v, %v; want revision 0, no answers", got, err)
			}
			next := MCPTask{Status: TaskInputRequired, InputRequests: `{"q2":{}}`, Answers: `{"q1":{"action":"accept"}}`}
			if moved, err := r.SwapMCPTask(ctx, id, "alice", got.Revision, next); err != nil || !moved {
				t.Fatalf("swap from revision 0: moved %v, %v", moved, err)
			}
			if moved, err := a.SwapMCPTask(ctx, id, "alice", got.Revision, MCPTask{Status: TaskWorking}); err != nil || moved {
				t.Errorf("a second swap from revision 0: moved %v, %v; want not moved", moved, err)
			}
			if _, err := a.SwapMCPTask(ctx, id, "bob", 1, MCPTask{Status: TaskCancelled}); !errors.Is(err, ErrNotFound) {
				t.Errorf("alice's task swapped by bob: %v, want ErrNotFound", err)
			}
			got, err = a.MCPTaskOf(ctx, id, "alice")
			if err != nil || got.Revision != 1 || got.Answers != next.Answers || got.InputRequests != next.InputRequests {
				t.Errorf("after the swap: %+v, %v; want %+v at revision 1", got, err, next)
			}
			if moved, err := a.UpdateMCPTask(ctx, id, "alice", MCPTask{Status: TaskWorking}); err != nil || !moved {
				t.Fatalf("update: moved %v, %v", moved, err)
			}
			if got, err := a.MCPTaskOf(ctx, id, "alice"); err != nil || got.Revision != 2 {
				t.Errorf("an update leaves revision %d, %v; want 2", got.Revision, err)
			}
		})
	}
}
