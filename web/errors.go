package web

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/tree"
	"github.com/elysia-go/elysia/web/browsersafety"
)

// ErrUnavailable is matched by errors about a dependency that is temporarily
// unavailable (a server whose circuit is open). It maps to 503.
var ErrUnavailable = errors.New("unavailable")

// ErrLimit is matched by errors about a per-user cap that is reached (a
// user who keeps as many secrets as allowed puts a new one). It maps to
// 409, and its text, which names the cap, is shown.
var ErrLimit = errors.New("limit reached")

// requestError is an error web itself finds in a request (bad JSON, a
// missing field, a missing key); its message is shown to the client as is.
type requestError struct {
	status int
	msg    string
}

func (e *requestError) Error() string { return e.msg }

// HTTPStatus is the status the error is answered with; the MCP endpoint,
// which reads bodies itself, finds it there.
func (e *requestError) HTTPStatus() int { return e.status }

func badRequest(msg string) error { return &requestError{http.StatusBadRequest, msg} }

// ErrUnauthorized is the answer to a missing or unknown API key (401).
var ErrUnauthorized error = &requestError{http.StatusUnauthorized, "missing or invalid API key"}

// statusOf maps an error to its HTTP status. It is the one place where
// errors become status codes: the tree's sentinels (which persist makes the
// store's errors match too, tree.ErrStoreUnavailable among them), the
// tools' and ErrUnavailable.
func statusOf(err error) int {
	var re *requestError
	switch {
	case errors.As(err, &re):
		return re.status
	case errors.Is(err, browsersafety.ErrForbidden):
		return http.StatusForbidden
	case errors.Is(err, browsersafety.ErrUnsupportedMediaType):
		return http.StatusUnsupportedMediaType
	case errors.Is(err, browsersafety.ErrUnreadableBody):
		return http.StatusBadRequest
	case errors.Is(err, tree.ErrStoreUnavailable):
		// Before ErrBusy and ErrNotFound: a lock or a read that the
		// database failed says nothing about the conversation.
		return http.StatusServiceUnavailable
	case errors.Is(err, tree.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, tree.ErrBusy), errors.Is(err, ErrLimit):
		return http.StatusConflict
	case errors.Is(err, tools.ErrInvalidArguments),
		errors.Is(err, tools.ErrUnknownTool),
		errors.Is(err, tree.ErrInvalid),
		errors.Is(err, tree.ErrExists):
		return http.StatusUnprocessableEntity
	case errors.Is(err, ErrUnavailable):
		return http.StatusServiceUnavailable
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout
	case errors.Is(err, context.Canceled):
		return 499 // client closed request, as nginx logs it; nobody reads the body
	}
	return http.StatusInternalServerError
}

// PublicError is what the client is told about err: its status (StatusOf)
// and its message, the error's own text below 500, a generic one with the
// request id of ctx from 500 up. The caller logs the detail.
func PublicError(ctx context.Context, err error) (status int, msg string) {
	status = statusOf(err)
	return status, publicMessage(ctx, status, err)
}

// publicMessage returns what the client is told about err with the given
// status: the error's own text below 500, a generic message with the
// request id from 500 up (the detail goes to the log).
func publicMessage(ctx context.Context, status int, err error) string {
	if status < 500 {
		return err.Error()
	}
	generic := "internal error"
	switch status {
	case http.StatusBadGateway:
		generic = "MCP server failure"
	case http.StatusServiceUnavailable:
		generic = "service unavailable"
		if errors.Is(err, tree.ErrStoreUnavailable) {
			generic = "the database is unavailable; try again shortly"
		}
	case http.StatusGatewayTimeout:
		generic = "timed out"
	}
	return generic + " (request id " + RequestID(ctx) + ")"
}

// fail answers a JSON request with err mapped to its status and message,
// merged with the extra fields of the route's body (so a failed tree request
// still carries "tree": {}). 5xx details are logged here, once.
func (s *Server) fail(c *gin.Context, err error, extra object) {
	s.failStatus(c, statusOf(err), err, extra)
}

// retryAter is implemented by errors that know when the failing server may
// be tried again (one whose circuit is open). A zero time means unknown.
type retryAter interface {
	RetryAt() time.Time
}

// serverStatus is statusOf for the errors of an MCP server (or its
// authorization server): an unclassified one is that server's failure,
// 502, not this service's.
func serverStatus(err error) int {
	if status := statusOf(err); status != http.StatusInternalServerError {
		return status
	}
	return http.StatusBadGateway
}

// StatusOfServerError is the status FailServer answers err with: StatusOf,
// except that an unclassified error is that of an MCP server (or its
// authorization server), 502, not this service's.
func StatusOfServerError(err error) int { return serverStatus(err) }

// failServer is fail for the MCP server routes, where an unclassified error
// is a failure of the server behind the gateway (502), not of this service.
// Unlike other 5xx answers, these show the error's own text, which Servers
// promises names the server and holds no secret: it is what the model is
// told, and the client needs it to know which server failed and why. When
// the error says when the server is tried again, the answer says it too and
// carries Retry-After.
func (s *Server) failServer(c *gin.Context, err error, extra object) {
	status := serverStatus(err)
	if status < 500 {
		s.failStatus(c, status, err, extra)
		return
	}
	msg := err.Error()
	var ra retryAter
	if errors.As(err, &ra) {
		if at := ra.RetryAt(); !at.IsZero() {
			secs := max(int64(math.Ceil(time.Until(at).Seconds())), 1)
			c.Header("Retry-After", strconv.FormatInt(secs, 10))
			msg += "; retry after " + at.UTC().Format(time.RFC3339)
		}
	}
	s.failMessage(c, status, err, msg+" (request id "+RequestID(c.Request.Context())+")", extra)
}

func (s *Server) failStatus(c *gin.Context, status int, err error, extra object) {
	s.failMessage(c, status, err, publicMessage(c.Request.Context(), status, err), extra)
}

// failMessage answers with status and msg as the error; err, the detail,
// is logged from 500 up.
func (s *Server) failMessage(c *gin.Context, status int, err error, msg string, extra object) {
	ctx := c.Request.Context()
	if status >= 500 {
		s.logger.ErrorContext(ctx, "request failed", slog.Int(logKeyStatus, status), slog.String(logKeyRoute, c.FullPath()), slog.Any(logKeyErr, err))
	}
	c.Abort()
	writeJSON(c, status, append(object{kv("error", msg)}, extra...))
}
