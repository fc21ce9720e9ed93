package session

import (
	"errors"
	"regexp"
	"strconv"

	mcptransport "github.com/mark3labs/mcp-go/client/transport"
)

// statusText is how mcp-go (v1.2.1, go.mod's version) reports an HTTP
// status it did not expect, the only way it does: "request failed with
// status 404: <body>" for a POST on either HTTP transport, "unexpected
// status code: 404" for the SSE stream's GET and "unexpected status 404"
// for a resumed stream's. It is matched only at the start of a
// transport's own error, never in a body or a server's message; the
// mcpgateway tests (permanent_test.go) pin it against mcp-go's real errors.
var statusText = regexp.MustCompile(`^(?:request failed with status|unexpected status code:|unexpected status) (\d{3})\b`)

// HTTPStatus returns the HTTP status a server answered a request of the
// session's transport with, when that is what err reports, else 0. An
// error the server sent as its JSON-RPC answer is never one, whatever its
// message says. 401 is reported as a sign-in needed instead.
func HTTPStatus(err error) int {
	var inner error
	if te, ok := errors.AsType[*mcptransport.Error](err); ok {
		inner = te.Err
	} else if te, ok := errors.AsType[*transportError](err); ok {
		inner = te.err
	}
	if inner == nil {
		return 0
	}
	m := statusText.FindStringSubmatch(inner.Error())
	if m == nil {
		return 0
	}
	code, _ := strconv.Atoi(m[1])
	return code
}

// transportError marks an error of a transport that mcp-go's client does
// not wrap in an *mcptransport.Error itself (the stream's Start, and the
// requests the conn sends raw), so that HTTPStatus reads it the same way.
// Its message is the error's own.
type transportError struct{ err error }

func (e *transportError) Error() string { return e.err.Error() }

// Unwrap returns the transport's error.
func (e *transportError) Unwrap() error { return e.err }
