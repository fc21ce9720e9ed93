package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/elysia-go/elysia/mcpendpoint"
	"github.com/elysia-go/elysia/store"
)

// storeTasks is the mcpendpoint.TaskStore of the service: the store's
// mcp_tasks table, which every replica on the database reads.
type storeTasks struct{ s *store.Store }

var _ mcpendpoint.TaskStore = storeTasks{}

func (st storeTasks) CreateTask(ctx context.Context, id, user string, expires time.Time) error {
	return taskErr(st.s.CreateMCPTask(ctx, id, user, expires))
}

func (st storeTasks) Task(ctx context.Context, id, user string) (mcpendpoint.TaskState, error) {
	t, err := st.s.MCPTaskOf(ctx, id, user)
	if err != nil {
		return mcpendpoint.TaskState{}, taskErr(err)
	}
	return mcpendpoint.TaskState{Status: t.Status, StatusMessage: t.StatusMessage, Result: t.Result, InputRequests: t.InputRequests,
		Answers: t.Answers, Revision: t.Revision, Created: t.Created, Updated: t.Updated, Expires: t.Expires}, nil
}

func (st storeTasks) SwapTask(ctx context.Context, id, user string, revision int64, t mcpendpoint.TaskState) (bool, error) {
	moved, err := st.s.SwapMCPTask(ctx, id, user, revision, store.MCPTask{Status: t.Status, StatusMessage: t.StatusMessage,
		Result: t.Result, InputRequests: t.InputRequests, Answers: t.Answers})
	return moved, taskErr(err)
}

// taskErr makes the store's ErrNotFound the endpoint's ErrTaskNotFound.
func taskErr(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%w: %w", mcpendpoint.ErrTaskNotFound, err)
	}
	return err
}
