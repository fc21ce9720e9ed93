package stream

import "errors"

// errWriteTimeout is the cause of a WebSocket write's ctx ending because
// the write missed the Server's StreamWriteTimeout, which tells it apart
// from the session ending.
var errWriteTimeout = errors.New("stream write timed out")
