package store

import "errors"

// ErrNotFound is returned when the user or conversation asked for does not
// exist (for that user).
var ErrNotFound = errors.New("not found")

// ErrClosed is returned by the methods of a [Store] after [Store.Close].
var ErrClosed = errors.New("store closed")
