// Package tasks keeps the records of the Tasks extension of MCP
// (2026-07-28, SEP-2663): a task's State as every replica reads it, the
// Store that keeps the records, a MemStore for one process, and the moves
// of a record: Move with compare-and-swap, TakeUpdate for a client's
// answers, and the Envelope the extension gives of it.
package tasks

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"
)

// Statuses of a task.
const (
	Working       = "working"
	InputRequired = "input_required"
	Completed     = "completed"
	Failed        = "failed"
	Cancelled     = "cancelled"
)

// PollInterval is the pollIntervalMs clients are given.
const PollInterval = 500 * time.Millisecond

// ErrNotFound is matched by a Store's error for a task that is not
// there, past its expiry, or another user's.
var ErrNotFound = errors.New("no such task")

// State is one task as every replica sees it.
type State struct {
	// Status is one of the statuses: Working, InputRequired, Completed,
	// Failed or Cancelled; StatusMessage says more of it, if anything.
	Status        string
	StatusMessage string
	// Result is the JSON of the call's result (completed) or of its
	// JSON-RPC error (failed).
	Result string
	// InputRequests is the JSON object of the questions the client has
	// not answered (input_required).
	InputRequests string
	// Answers is the JSON object of answers not yet handed to the call.
	Answers string
	// Revision counts the moves; SwapTask moves only from the one read.
	Revision int64
	Created  time.Time
	Updated  time.Time
	Expires  time.Time
}

// Store keeps the tasks where every replica reads them.
type Store interface {
	// CreateTask keeps task id of user, working, until expires.
	CreateTask(ctx context.Context, id, user string, expires time.Time) error
	// Task returns task id of user, or an error matching ErrNotFound.
	Task(ctx context.Context, id, user string) (State, error)
	// SwapTask moves task id of user to t if it is at revision.
	SwapTask(ctx context.Context, id, user string, revision int64, t State) (bool, error)
}

// Terminal reports whether status is the end of a task: completed,
// failed or cancelled.
func Terminal(status string) bool {
	return status == Completed || status == Failed || status == Cancelled
}

// maxMoves bounds the tries of Move.
const maxMoves = 16

// Move applies f to task id of user in s and writes what it made, again
// on a conflict with another writer; f reports false to write nothing.
// It returns the task as f left it.
func Move(ctx context.Context, s Store, id, user string, f func(*State) bool) (State, error) {
	for range maxMoves {
		t, err := s.Task(ctx, id, user)
		if err != nil {
			return State{}, err
		}
		rev := t.Revision
		if !f(&t) {
			return t, nil
		}
		ok, err := s.SwapTask(ctx, id, user, rev, t)
		if err != nil {
			return State{}, err
		}
		if ok {
			return t, nil
		}
	}
	return State{}, errors.New("the task changed too often to be moved")
}

// TakeUpdate moves the answers of rs to questions t asks from its
// InputRequests to its Answers; answers to anything else are dropped. It
// reports whether t changed.
func TakeUpdate(t *State, rs map[string]json.RawMessage) bool {
	if t.Status != InputRequired || len(rs) == 0 {
		return false
	}
	var open, answers map[string]json.RawMessage
	_ = json.Unmarshal([]byte(t.InputRequests), &open)
	_ = json.Unmarshal([]byte(t.Answers), &answers)
	if answers == nil {
		answers = map[string]json.RawMessage{}
	}
	moved := false
	for key, a := range rs {
		if _, ok := open[key]; ok {
			delete(open, key)
			answers[key] = a
			moved = true
		}
	}
	if !moved {
		return false
	}
	b, _ := json.Marshal(answers)
	t.Answers = string(b)
	t.Status, t.InputRequests = Working, ""
	if len(open) > 0 {
		b, _ := json.Marshal(open)
		t.Status, t.InputRequests = InputRequired, string(b)
	}
	return true
}

// Envelope is the fields of task id in state t as the extension gives
// them, with resultType rt.
func Envelope(id string, t State, rt string) map[string]any {
	m := map[string]any{
		"resultType":     rt,
		"taskId":         id,
		"status":         t.Status,
		"createdAt":      t.Created.UTC().Format(time.RFC3339Nano),
		"lastUpdatedAt":  t.Updated.UTC().Format(time.RFC3339Nano),
		"ttlMs":          max(1, time.Until(t.Expires).Milliseconds()),
		"pollIntervalMs": PollInterval.Milliseconds(),
	}
	if t.StatusMessage != "" {
		m["statusMessage"] = t.StatusMessage
	}
	return m
}

// NewID returns a random task id.
func NewID() string {
	var b [24]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return "task-" + hex.EncodeToString(b[:])
}
