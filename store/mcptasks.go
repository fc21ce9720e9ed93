package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// The aggregate MCP endpoint's tasks (the Tasks extension of MCP
// 2026-07-28) are kept here so that any replica answers tasks/get and
// tasks/cancel for a call another one runs: each under the SHA-256 of its
// id (a bearer of the task) and of its user. A task past its expiry is
// gone: not found, and deleted by the next CreateMCPTask.

// MaxMCPTaskPayload caps [MCPTask.Result], [MCPTask.InputRequests] and
// [MCPTask.Answers].
const MaxMCPTaskPayload = 4 << 20

// Statuses of an MCPTask (the Tasks extension's). The last three are
// terminal: a task in one of them changes no more.
const (
	TaskWorking       = "working"
	TaskInputRequired = "input_required"
	TaskCompleted     = "completed"
	TaskFailed        = "failed"
	TaskCancelled     = "cancelled"
)

// MCPTask is one task's state as every replica sees it.
type MCPTask struct {
	Status        string
	StatusMessage string
	// Result is the JSON of the call's result (completed) or of its
	// JSON-RPC error (failed); "" before the task ends.
	Result string
	// InputRequests is the JSON of the questions waiting for the client
	// (input_required); "" otherwise.
	InputRequests string
	// Answers is the JSON of the client's answers to InputRequests not
	// yet taken by the replica running the call; "" when none.
	Answers string
	// Revision counts the task's moves: SwapMCPTask moves it only from
	// the revision its caller read.
	Revision int64
	Created  time.Time
	Updated  time.Time
	Expires  time.Time
}

// CreateMCPTask keeps the new task id of user, working, until expires,
// first dropping the tasks past their expiry. An id kept already is an
// error.
func (s *Store) CreateMCPTask(ctx context.Context, id, user string, expires time.Time) (err error) {
	ctx, end := s.call(ctx)
	defer end(&err)
	if err := s.check(id, user); err != nil {
		return err
	}
	now := s.now()
	if _, err := s.db.ExecContext(ctx, s.q(`DELETE FROM mcp_tasks WHERE expires_at < ?`), now.UnixMicro()); err != nil {
		return fmt.Errorf("drop expired MCP tasks: %w", err)
	}
	if _, err := s.db.ExecContext(ctx, s.q(`INSERT INTO mcp_tasks (id_hash, user_hash, status, created_at, updated_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?)`), hashHex(id), hashHex(user), TaskWorking, now.UnixMicro(), now.UnixMicro(), expires.UnixMicro()); err != nil {
		return fmt.Errorf("keep an MCP task: %w", err)
	}
	return nil
}

// MCPTaskOf returns task id of user. A task missing, past its expiry or
// another user's is an error matching ErrNotFound.
func (s *Store) MCPTaskOf(ctx context.Context, id, user string) (_ MCPTask, err error) {
	ctx, end := s.call(ctx)
	defer end(&err)
	if err := s.check(id, user); err != nil {
		return MCPTask{}, err
	}
	var t MCPTask
	var created, updated, expires int64
	err = s.db.QueryRowContext(ctx, s.q(`SELECT status, status_message, result, input_requests, answers, revision, created_at, updated_at, expires_at
		FROM mcp_tasks WHERE id_hash = ? AND user_hash = ? AND expires_at >= ?`),
		hashHex(id), hashHex(user), s.now().UnixMicro()).Scan(&t.Status, &t.StatusMessage, &t.Result, &t.InputRequests, &t.Answers, &t.Revision, &created, &updated, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return MCPTask{}, fmt.Errorf("MCP task: %w", ErrNotFound)
	}
	if err != nil {
		return MCPTask{}, fmt.Errorf("read an MCP task: %w", err)
	}
	t.Created, t.Updated, t.Expires = time.UnixMicro(created).UTC(), time.UnixMicro(updated).UTC(), time.UnixMicro(expires).UTC()
	return t, nil
}

// UpdateMCPTask moves task id of user to t's status, message, result and
// input requests, unless it ended already: it reports whether it moved. A
// task missing, past its expiry or another user's is an error matching
// ErrNotFound. Cancelling is an update to TaskCancelled.
func (s *Store) UpdateMCPTask(ctx context.Context, id, user string, t MCPTask) (moved bool, err error) {
	ctx, end := s.call(ctx)
	defer end(&err)
	if err := s.check(id, user); err != nil {
		return false, err
	}
	if err := checkMCPTask(t); err != nil {
		return false, fmt.Errorf("update an MCP task: %w", err)
	}
	now := s.now().UnixMicro()
	res, err := s.db.ExecContext(ctx, s.q(`UPDATE mcp_tasks
		SET status = ?, status_message = ?, result = ?, input_requests = ?, updated_at = ?, revision = revision + 1
		WHERE id_hash = ? AND user_hash = ? AND expires_at >= ? AND status NOT IN (?, ?, ?)`),
		t.Status, t.StatusMessage, t.Result, t.InputRequests, now,
		hashHex(id), hashHex(user), now, TaskCompleted, TaskFailed, TaskCancelled)
	if err != nil {
		return false, fmt.Errorf("update an MCP task: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n > 0 {
		return err == nil, err
	}
	// Not moved: ended already, or not there for this user.
	if _, err := s.MCPTaskOf(ctx, id, user); err != nil {
		return false, err
	}
	return false, nil
}

// SwapMCPTask moves task id of user to t's status, message, result, input
// requests and answers if it is still at revision, ended or not: it
// reports whether it moved. A task moved since by another caller is not
// moved (read it again); one missing, past its expiry or another user's is
// an error matching ErrNotFound.
func (s *Store) SwapMCPTask(ctx context.Context, id, user string, revision int64, t MCPTask) (moved bool, err error) {
	ctx, end := s.call(ctx)
	defer end(&err)
	if err := s.check(id, user); err != nil {
		return false, err
	}
	if err := checkMCPTask(t); err != nil {
		return false, fmt.Errorf("swap an MCP task: %w", err)
	}
	now := s.now().UnixMicro()
	res, err := s.db.ExecContext(ctx, s.q(`UPDATE mcp_tasks
		SET status = ?, status_message = ?, result = ?, input_requests = ?, answers = ?, updated_at = ?, revision = revision + 1
		WHERE id_hash = ? AND user_hash = ? AND expires_at >= ? AND revision = ?`),
		t.Status, t.StatusMessage, t.Result, t.InputRequests, t.Answers, now,
		hashHex(id), hashHex(user), now, revision)
	if err != nil {
		return false, fmt.Errorf("swap an MCP task: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n > 0 {
		return err == nil, err
	}
	if _, err := s.MCPTaskOf(ctx, id, user); err != nil {
		return false, err
	}
	return false, nil
}

// checkMCPTask refuses a task of an unknown status or too big.
func checkMCPTask(t MCPTask) error {
	switch t.Status {
	case TaskWorking, TaskInputRequired, TaskCompleted, TaskFailed, TaskCancelled:
	default:
		return fmt.Errorf("unknown status %q", t.Status)
	}
	if len(t.Result) > MaxMCPTaskPayload || len(t.InputRequests) > MaxMCPTaskPayload || len(t.Answers) > MaxMCPTaskPayload {
		return fmt.Errorf("a result, input requests or answers over %d bytes", MaxMCPTaskPayload)
	}
	return nil
}
