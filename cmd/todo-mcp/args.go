package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// argError is a problem with one argument of a tool call; it becomes an
// isError result whose text names the field.
type argError struct {
	Field string
	Msg   string
}

func (e *argError) Error() string { return e.Field + ": " + e.Msg }

// args holds a tool call's arguments, still as JSON, by name. JSON null counts
// as absent.
type args map[string]json.RawMessage

// parseArgs decodes the arguments of req, which must be a JSON object (or absent).
func parseArgs(req mcp.CallToolRequest) (args, error) {
	var raw []byte
	switch {
	case len(req.Params.RawArguments) > 0:
		raw = req.Params.RawArguments
	case req.Params.Arguments == nil:
		return args{}, nil
	default:
		var err error
		if raw, err = json.Marshal(req.Params.Arguments); err != nil {
			return nil, &argError{Field: "arguments", Msg: "cannot be encoded as JSON"}
		}
	}
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return args{}, nil
	}
	var a args
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, &argError{Field: "arguments", Msg: "must be a JSON object"}
	}
	for k, v := range a {
		if bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			delete(a, k)
		}
	}
	return a, nil
}

// str sets *dst to the string argument name, leaving it nil when absent.
// With nonEmpty, a blank string is an error.
func (a args) str(name string, nonEmpty bool, dst **string) error {
	raw, ok := a[name]
	if !ok {
		return nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return &argError{Field: name, Msg: "must be a string"}
	}
	if nonEmpty && strings.TrimSpace(s) == "" {
		return &argError{Field: name, Msg: "must not be empty"}
	}
	*dst = &s
	return nil
}

// integer sets *dst to the integer argument name, leaving it nil when absent;
// it must lie in [lo, hi]. Whole numbers written as floats (2.0) are accepted.
func (a args) integer(name string, lo, hi int64, dst **int64) error {
	raw, ok := a[name]
	if !ok {
		return nil
	}
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil || f != math.Trunc(f) {
		return &argError{Field: name, Msg: "must be an integer"}
	}
	if f < float64(lo) || f > float64(hi) {
		if hi == math.MaxInt64 {
			return &argError{Field: name, Msg: fmt.Sprintf("must be at least %d", lo)}
		}
		return &argError{Field: name, Msg: fmt.Sprintf("must be between %d and %d", lo, hi)}
	}
	n := int64(f)
	*dst = &n
	return nil
}

// priority sets *dst to the priority argument (1–5), leaving it nil when absent.
func (a args) priority(dst **int) error {
	var n *int64
	if err := a.integer("priority", 1, 5, &n); err != nil || n == nil {
		return err
	}
	p := int(*n)
	*dst = &p
	return nil
}

// todoID sets *dst to the required todo_id argument.
func (a args) todoID(dst *int64) error {
	var n *int64
	if err := a.integer("todo_id", 1, math.MaxInt64, &n); err != nil {
		return err
	}
	if n == nil {
		return &argError{Field: "todo_id", Msg: "is required"}
	}
	*dst = *n
	return nil
}

// status sets *dst to the status argument, leaving it nil when absent.
func (a args) status(dst **string) error {
	var s *string
	if err := a.str("status", false, &s); err != nil || s == nil {
		return err
	}
	if *s != statusActive && *s != statusCompleted {
		return &argError{Field: "status", Msg: fmt.Sprintf("must be %q or %q, not %q", statusActive, statusCompleted, *s)}
	}
	*dst = s
	return nil
}

// strings sets *dst to the string-array argument name, leaving it nil when absent.
func (a args) strings(name string, dst **[]string) error {
	raw, ok := a[name]
	if !ok {
		return nil
	}
	var s []string
	if err := json.Unmarshal(raw, &s); err != nil {
		return &argError{Field: name, Msg: "must be an array of strings"}
	}
	*dst = &s
	return nil
}

// date sets *dst to the date argument name, leaving it nil when absent. It
// must be a real calendar date written YYYY-MM-DD.
func (a args) date(name string, dst **string) error {
	var s *string
	if err := a.str(name, false, &s); err != nil || s == nil {
		return err
	}
	d, err := time.Parse(dateLayout, *s)
	if err != nil || d.Format(dateLayout) != *s {
		return &argError{Field: name, Msg: fmt.Sprintf("%q is not a valid date: use YYYY-MM-DD, e.g. 2026-03-01", *s)}
	}
	*dst = s
	return nil
}

// firstErr returns the first non-nil error, so a call with several bad
// arguments is told about the first one in schema order.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
