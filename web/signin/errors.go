package signin

import (
	"net/http"

	"github.com/elysia-go/elysia/web"
)

// The sentinels are web.Errors, so that web's one error mapper gives them
// their status wherever they are wrapped.

// ErrUnknownState is matched by SignIns.FinishSignIn's error when the
// callback's state is unknown, expired, already used or another user's. It
// maps to 400.
var ErrUnknownState = web.Error(http.StatusBadRequest, "unknown or expired sign-in state")

// ErrNotBound is matched by SignIns.FinishSignIn's error when the
// callback's browser does not hold the secret of the browser that started
// the sign-in (Callback.Check). It maps to 400.
var ErrNotBound = web.Error(http.StatusBadRequest, "sign-in not started in this browser")

// ErrWrongCallback is matched by SignIns.FinishSignIn's error when the
// answer came back on another server's callback path than the sign-in's
// (Callback.Check): an authorization server mix-up. It maps to 400.
var ErrWrongCallback = web.Error(http.StatusBadRequest, "sign-in answer on another server's callback")

// ErrTooMany is matched by SignIns.StartSignIn's error when the user, or
// all users, have as many sign-ins waiting for their callback as the
// service keeps. It maps to 429.
var ErrTooMany = web.Error(http.StatusTooManyRequests, "too many sign-ins waiting")
