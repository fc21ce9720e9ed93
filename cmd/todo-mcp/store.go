package main

import (
	"context"
	"errors"
	"slices"
	"strings"
)

// Statuses a todo can have.
const (
	statusActive    = "active"
	statusCompleted = "completed"
)

// defaultPriority is the priority of a todo created without one: the middle of 1–5.
const defaultPriority = 3

// dateLayout is the layout of due dates (YYYY-MM-DD), which sort as text.
const dateLayout = "2006-01-02"

// errNotFound is returned by the store when no todo has the requested id.
var errNotFound = errors.New("todo not found")

// todo is one item of the list, as stored and as the tools return it.
type todo struct {
	ID          int64    `json:"id"`
	Title       string   `json:"title"`
	Description string   `json:"description"`
	Status      string   `json:"status"`
	Priority    int      `json:"priority"`
	Tags        []string `json:"tags"`
	DueDate     *string  `json:"due_date"`
	CreatedAt   string   `json:"created_at"`
	UpdatedAt   string   `json:"updated_at"`
}

// newTodo holds the fields of a todo to create; the status is always active.
type newTodo struct {
	Title       string
	Description string
	Priority    int
	Tags        []string
	DueDate     *string
}

// patch holds the fields update_todo changes; nil means unchanged.
type patch struct {
	Title       *string
	Description *string
	Status      *string
	Priority    *int
	Tags        *[]string
	DueDate     *string
}

// empty reports whether p changes nothing.
func (p patch) empty() bool {
	return p.Title == nil && p.Description == nil && p.Status == nil &&
		p.Priority == nil && p.Tags == nil && p.DueDate == nil
}

// filter selects todos; zero fields select everything.
type filter struct {
	Status    string   // "" for any status
	Priority  int      // 0 for any priority
	Tags      []string // todos carrying every one of these tags (case-insensitive)
	DueBefore string   // due on or before this date; todos without a due date are excluded
	DueAfter  string   // due on or after this date; todos without a due date are excluded
	Query     string   // case-insensitive substring of the title or the description
}

// store keeps todos. Implementations are safe for concurrent use; the caller
// that opened a store closes it once, after its last call.
type store interface {
	// Create adds a todo and returns it with its id and timestamps.
	Create(ctx context.Context, t newTodo) (todo, error)
	// List returns the todos f selects, oldest first.
	List(ctx context.Context, f filter) ([]todo, error)
	// Update applies p to the todo id and returns it; errNotFound if there is none.
	Update(ctx context.Context, id int64, p patch) (todo, error)
	// Delete removes the todo id and returns what it was; errNotFound if there is none.
	Delete(ctx context.Context, id int64) (todo, error)
}

// normalizeTags trims tags, drops empty ones and duplicates (ignoring case),
// and never returns nil, so a todo's tags encode as [] rather than null.
func normalizeTags(tags []string) []string {
	out := make([]string, 0, len(tags))
	for _, t := range tags {
		t = strings.TrimSpace(t)
		if t == "" || slices.ContainsFunc(out, func(o string) bool { return strings.EqualFold(o, t) }) {
			continue
		}
		out = append(out, t)
	}
	return out
}

// hasTags reports whether have holds every tag in want, ignoring case.
func hasTags(have, want []string) bool {
	for _, w := range want {
		if !slices.ContainsFunc(have, func(h string) bool { return strings.EqualFold(h, w) }) {
			return false
		}
	}
	return true
}
