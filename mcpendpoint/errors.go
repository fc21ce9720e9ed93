package mcpendpoint

import "errors"

// ErrUnknownSession is matched by the error of a request naming a session
// id the endpoint does not know, or one another user opened: the client
// gets 404 and must initialize again.
var ErrUnknownSession = errors.New("unknown MCP session")

// ErrTooManySubscriptions is matched by the error of a resources/subscribe
// past MaxSubscriptionsPerSession.
var ErrTooManySubscriptions = errors.New("too many resource subscriptions")

// ErrNotSubscribable is matched by the error of a resources/subscribe to a
// resource of a server the endpoint cannot subscribe at.
var ErrNotSubscribable = errors.New("resource cannot be subscribed to")
