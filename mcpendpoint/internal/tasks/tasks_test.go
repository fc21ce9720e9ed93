package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestMemStore(t *testing.T) {
	ctx := t.Context()
	m := NewMemStore()
	expires := time.Now().Add(time.Hour)
	if err := m.CreateTask(ctx, "t1", "alice", expires); err != nil {
		t.Fatal(err)
	}
	if err := m.CreateTask(ctx, "t1", "bob", expires); err == nil {
		t.Error("a second task t1 created")
	}
	got, err := m.Task(ctx, "t1", "alice")
	if err != nil || got.Status != Working || got.Revision != 0 || !got.Expires.Equal(expires) || got.Created.IsZero() || !got.Updated.Equal(got.Created) {
		t.Fatalf("Task = %+v, %v; want a new working task", got, err)
	}
	if _, err := m.Task(ctx, "t1", "bob"); !errors.Is(err, ErrNotFound) {
		t.Errorf("alice's task read by bob: %v, want ErrNotFound", err)
	}
	if _, err := m.Task(ctx, "t2", "alice"); !errors.Is(err, ErrNotFound) {
		t.Errorf("no task t2: %v, want ErrNotFound", err)
	}
	if _, err := m.SwapTask(ctx, "t1", "bob", 0, State{Status: Cancelled}); !errors.Is(err, ErrNotFound) {
		t.Errorf("alice's task moved by bob: %v, want ErrNotFound", err)
	}

	next := State{Status: Completed, Result: `{}`, Revision: 7, Created: time.Unix(1, 0), Expires: time.Unix(2, 0)}
	if ok, err := m.SwapTask(ctx, "t1", "alice", 0, next); !ok || err != nil {
		t.Fatalf("SwapTask at revision 0 = %v, %v", ok, err)
	}
	moved, _ := m.Task(ctx, "t1", "alice")
	if moved.Status != Completed || moved.Result != `{}` || moved.Revision != 1 || !moved.Created.Equal(got.Created) || !moved.Expires.Equal(expires) || moved.Updated.Before(got.Updated) {
		t.Errorf("after the swap: %+v; want completed at revision 1, created and expiring as before", moved)
	}
	if ok, err := m.SwapTask(ctx, "t1", "alice", 0, State{Status: Failed}); ok || err != nil {
		t.Errorf("SwapTask from a stale revision = %v, %v; want false, nil", ok, err)
	}

	if err := m.CreateTask(ctx, "old", "alice", time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Task(ctx, "old", "alice"); !errors.Is(err, ErrNotFound) {
		t.Errorf("an expired task: %v, want ErrNotFound", err)
	}
	if err := m.CreateTask(ctx, "t3", "alice", expires); err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	_, kept := m.tasks["old"]
	m.mu.Unlock()
	if kept {
		t.Error("an expired task kept past the next CreateTask")
	}
}

// racing is a Store that another writer moves before each of the first
// conflicts swaps.
type racing struct {
	*MemStore
	conflicts int
}

func (r *racing) SwapTask(ctx context.Context, id, user string, revision int64, t State) (bool, error) {
	if r.conflicts > 0 {
		r.conflicts--
		cur, err := r.Task(ctx, id, user)
		if err != nil {
			return false, err
		}
		cur.StatusMessage += "x"
		if _, err := r.MemStore.SwapTask(ctx, id, user, cur.Revision, cur); err != nil {
			return false, err
		}
	}
	return r.MemStore.SwapTask(ctx, id, user, revision, t)
}

func TestMove(t *testing.T) {
	ctx := t.Context()
	s := &racing{MemStore: NewMemStore(), conflicts: 3}
	if err := s.CreateTask(ctx, "t1", "alice", time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	calls := 0
	got, err := Move(ctx, s, "t1", "alice", func(t *State) bool {
		calls++
		t.Status = Cancelled
		return true
	})
	if err != nil || got.Status != Cancelled || got.StatusMessage != "xxx" || calls != 4 {
		t.Fatalf("Move = %+v, %v after %d calls; want cancelled over the other writer's moves, on the 4th", got, err, calls)
	}
	if st, _ := s.Task(ctx, "t1", "alice"); st.Status != Cancelled || st.Revision != 4 {
		t.Errorf("kept %+v, want cancelled at revision 4", st)
	}

	got, err = Move(ctx, s, "t1", "alice", func(t *State) bool {
		t.Status = Failed
		return false
	})
	if err != nil || got.Status != Failed {
		t.Errorf("Move writing nothing = %+v, %v; want f's state", got, err)
	}
	if st, _ := s.Task(ctx, "t1", "alice"); st.Status != Cancelled || st.Revision != 4 {
		t.Errorf("kept %+v after a move that writes nothing, want it as it was", st)
	}

	if _, err := Move(ctx, s, "t1", "bob", func(*State) bool { return true }); !errors.Is(err, ErrNotFound) {
		t.Errorf("Move of another's task: %v, want ErrNotFound", err)
	}

	s.conflicts = maxMoves
	if _, err := Move(ctx, s, "t1", "alice", func(*State) bool { return true }); err == nil || errors.Is(err, ErrNotFound) {
		t.Errorf("Move against a writer that always wins: %v, want it given up", err)
	}
}

func TestTakeUpdate(t *testing.T) {
	asks := `{"q1":{"method":"elicitation/create"},"q2":{"method":"elicitation/create"}}`
	for _, tc := range []struct {
		name                string
		in                  State
		rs                  string
		changed             bool
		status, open, taken string // the State after; "" in open or taken for none
	}{
		{"one of two", State{Status: InputRequired, InputRequests: asks}, `{"q1":{"action":"accept"},"nope":{}}`, true,
			InputRequired, `{"q2":{"method":"elicitation/create"}}`, `{"q1":{"action":"accept"}}`},
		{"all", State{Status: InputRequired, InputRequests: asks, Answers: `{"q0":1}`}, `{"q1":1,"q2":2}`, true,
			Working, "", `{"q0":1,"q1":1,"q2":2}`},
		{"none asked", State{Status: InputRequired, InputRequests: asks}, `{"nope":{}}`, false,
			InputRequired, asks, ""},
		{"no answers", State{Status: InputRequired, InputRequests: asks}, `{}`, false,
			InputRequired, asks, ""},
		{"not waiting", State{Status: Working, InputRequests: asks}, `{"q1":1}`, false,
			Working, asks, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rs map[string]json.RawMessage
			if err := json.Unmarshal([]byte(tc.rs), &rs); err != nil {
				t.Fatal(err)
			}
			st := tc.in
			if got := TakeUpdate(&st, rs); got != tc.changed {
				t.Errorf("TakeUpdate = %v, want %v", got, tc.changed)
			}
			taken := tc.taken
			if !tc.changed {
				taken = tc.in.Answers
			}
			if st.Status != tc.status || st.InputRequests != tc.open || st.Answers != taken {
				t.Errorf("after: %s %s %s; want %s %s %s", st.Status, st.InputRequests, st.Answers, tc.status, tc.open, taken)
			}
		})
	}
}

func TestEnvelope(t *testing.T) {
	created := time.Date(2026, 7, 28, 12, 0, 0, 0, time.FixedZone("x", 3600))
	st := State{Status: Working, Created: created, Updated: created.Add(time.Second), Expires: time.Now().Add(time.Hour)}
	m := Envelope("task-1", st, "task")
	if m["resultType"] != "task" || m["taskId"] != "task-1" || m["status"] != Working ||
		m["createdAt"] != "2026-07-28T11:00:00Z" || m["lastUpdatedAt"] != "2026-07-28T11:00:01Z" || m["pollIntervalMs"] != int64(500) {
		t.Errorf("Envelope = %v", m)
	}
	if ttl, _ := m["ttlMs"].(int64); ttl <= 0 || ttl > time.Hour.Milliseconds() {
		t.Errorf("ttlMs = %v, want within the hour", m["ttlMs"])
	}
	if _, ok := m["statusMessage"]; ok {
		t.Errorf("statusMessage given with none: %v", m)
	}
	st.StatusMessage, st.Expires = "why", time.Now().Add(-time.Minute)
	m = Envelope("task-1", st, "complete")
	if m["statusMessage"] != "why" || m["ttlMs"] != int64(1) || m["resultType"] != "complete" {
		t.Errorf("Envelope of an expired task with a message = %v, want ttlMs 1", m)
	}
}

func TestNewID(t *testing.T) {
	a, b := NewID(), NewID()
	if !strings.HasPrefix(a, "task-") || len(a) != len("task-")+48 || a == b {
		t.Errorf("NewID = %q, %q; want two task- and 48 hex digits", a, b)
	}
}

func TestTerminal(t *testing.T) {
	for status, want := range map[string]bool{Working: false, InputRequired: false, Completed: true, Failed: true, Cancelled: true, "": false} {
		if Terminal(status) != want {
			t.Errorf("Terminal(%q) = %v, want %v", status, !want, want)
		}
	}
}
