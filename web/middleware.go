package web

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/web/browsersafety"
)

// requestIDHeader carries the request id in both directions.
const requestIDHeader = "X-Request-ID"

// keyRequestID is the slog key of the request id.
const keyRequestID = "request_id"

// ctxKey is the type of the context keys of this package.
type ctxKey int

// requestInfoKey is the context key of a request's *requestInfo.
const requestInfoKey ctxKey = 0

// requestInfo is what the middleware learns of a request, kept in its
// context once (requestIDMiddleware): its id, and, once its key has been
// checked, whom the key acts for (setPrincipal). Both are set before the
// route's handler runs and never after, so whatever the handler starts
// reads them without a lock.
type requestInfo struct {
	id        string
	principal string
}

func infoOf(ctx context.Context) *requestInfo {
	info, _ := ctx.Value(requestInfoKey).(*requestInfo)
	return info
}

// RequestID returns the request id stored in ctx by the server's middleware,
// or "" when there is none. Adapters pass it on (tools.Call.RequestID) so a
// tool call's log lines can be matched with its request.
func RequestID(ctx context.Context) string {
	if info := infoOf(ctx); info != nil {
		return info.id
	}
	return ""
}

// validRequestID reports whether a client-supplied request id may be reused:
// 1 to 128 characters from [A-Za-z0-9._:-], so it is safe in logs and
// headers.
func validRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		b := id[i]
		ok := b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' ||
			b == '.' || b == '_' || b == '-' || b == ':'
		if !ok {
			return false
		}
	}
	return true
}

// requestIDMiddleware takes the request id from X-Request-ID when valid,
// generates one otherwise, sets it on the response and puts it in the
// request's context.
func requestIDMiddleware(c *gin.Context) {
	id := c.GetHeader(requestIDHeader)
	if !validRequestID(id) {
		id = tools.NewID()
	}
	c.Header(requestIDHeader, id)
	c.Request = c.Request.WithContext(context.WithValue(c.Request.Context(), requestInfoKey, &requestInfo{id: id}))
	c.Next()
}

// accessLog logs one line per request, after it is served: at debug (a
// page load is twenty requests, a person's terminal wants none of them),
// a 5xx at warn. The Authorization header and query strings are never
// logged.
func (s *Server) accessLog(c *gin.Context) {
	start := time.Now()
	c.Next()
	level := slog.LevelDebug
	if c.Writer.Status() >= http.StatusInternalServerError {
		level = slog.LevelWarn
	}
	ctx := c.Request.Context()
	if !s.logger.Enabled(ctx, level) {
		return // at the default level, most requests: build nothing
	}
	s.logger.LogAttrs(ctx, level, "http request",
		slog.String("method", c.Request.Method),
		slog.String(logKeyRoute, routeOf(c)),
		slog.String("path", c.Request.URL.Path),
		slog.Int(logKeyStatus, c.Writer.Status()),
		slog.Duration("duration", time.Since(start)),
	)
}

// recovery turns a handler panic into a 500 with the request id, and logs
// it. http.ErrAbortHandler is re-panicked, as net/http expects.
func (s *Server) recovery(c *gin.Context) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		if r == http.ErrAbortHandler { //nolint:errorlint // sentinel compared as net/http does
			panic(r)
		}
		err := fmt.Errorf("panic: %v", r)
		if c.Writer.Written() {
			s.logger.ErrorContext(c.Request.Context(), "handler panicked after writing", slog.Any(logKeyErr, err))
			c.Abort()
			return
		}
		s.failStatus(c, http.StatusInternalServerError, err, nil)
	}()
	c.Next()
}

// routeOf is the route pattern of a request, for logs and metric labels;
// requests that match no route share one label.
func routeOf(c *gin.Context) string {
	if r := c.FullPath(); r != "" {
		return r
	}
	return "unmatched"
}

// ctxHandler adds the request id found in the record's context to every log
// record.
type ctxHandler struct{ slog.Handler }

func (h ctxHandler) Handle(ctx context.Context, r slog.Record) error {
	if id := RequestID(ctx); id != "" {
		r.AddAttrs(slog.String(keyRequestID, id))
	}
	return h.Handler.Handle(ctx, r)
}

func (h ctxHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return ctxHandler{h.Handler.WithAttrs(as)}
}

func (h ctxHandler) WithGroup(name string) slog.Handler {
	return ctxHandler{h.Handler.WithGroup(name)}
}

// securityHeaders is the middleware that sets browsersafety's headers on
// every response (a page with inline script replaces the policy).
func securityHeaders(c *gin.Context) {
	browsersafety.SetHeaders(c.Writer.Header())
	c.Next()
}

// browserGuard is the middleware that runs the browser safety checks
// before any route (and before a 404 or 405), answering a refusal with a
// JSON error that says what to change.
func (s *Server) browserGuard(c *gin.Context) {
	if err := s.guard.Check(c.Request); err != nil {
		s.fail(c, err, nil)
		return
	}
	c.Next()
}
