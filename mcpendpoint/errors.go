package mcpendpoint

import (
	"errors"

	"github.com/elysia-go/elysia/mcpendpoint/internal/held"
	"github.com/elysia-go/elysia/mcpendpoint/internal/reqstate"
	"github.com/elysia-go/elysia/mcpendpoint/internal/sessions"
)

// ErrUnknownSession is matched by the error of a request naming a session
// id the endpoint does not know, or one another user opened: the client
// gets 404 and must initialize again.
var ErrUnknownSession = sessions.ErrUnknownSession

// ErrTooManySubscriptions is matched by the error of a resources/subscribe
// past MaxSubscriptionsPerSession.
var ErrTooManySubscriptions = sessions.ErrTooManySubscriptions

// ErrNotSubscribable is matched by the error of a resources/subscribe to a
// resource of a server the endpoint cannot subscribe at.
var ErrNotSubscribable = errors.New("resource cannot be subscribed to")

// ErrRequestState is matched by the error of a 2026-07-28 retry whose
// requestState the endpoint refuses: not one it issued, altered, expired,
// another user's or another request's. Nothing is run.
var ErrRequestState = reqstate.ErrRefused

// ErrCallGone is matched by the error of a 2026-07-28 retry whose call no
// longer waits for it: it ended, its wait for the client's answers
// lapsed, or the replica holding it is gone. The client calls the tool
// again.
var ErrCallGone = held.ErrGone
