package discovery

import "errors"

// ErrClosed is returned by Watch after Close has begun.
var ErrClosed = errors.New("discovery closed")
