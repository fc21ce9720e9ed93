package mcpendpoint

import "errors"

// ErrUnknownSession is matched by the error of a request naming a session
// id the endpoint does not know, or one another user opened: the client
// gets 404 and must initialize again.
var ErrUnknownSession = errors.New("unknown MCP session")
