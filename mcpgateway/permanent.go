package mcpgateway

import (
	"errors"
	"io/fs"
	"net"
	"net/url"
	"os/exec"
	"strconv"

	"github.com/elysia-go/elysia/mcpgateway/internal/session"
)

// permanentFailure says why err fails again however often it is retried: a
// command that is not found or may not be run, a URL whose host does not
// exist or whose scheme is not HTTP, an HTTP 4xx answer (but 408 and 429).
// It is "" for a failure that may pass (a refused connection, a timeout,
// a crash, a 5xx), and for an error the server answered with, whatever its
// message quotes: the server is up. Errors are told by their type; only
// the HTTP status is text in mcp-go's errors (session.HTTPStatus).
func permanentFailure(err error) string {
	switch {
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, fs.ErrNotExist):
		return "its command was not found"
	case errors.Is(err, fs.ErrPermission), errors.Is(err, exec.ErrDot):
		return "its command may not be run"
	case isHostNotFound(err):
		return "the host of its URL does not exist"
	case isNotHTTP(err):
		return "its URL is not an http or https URL"
	}
	if code := session.HTTPStatus(err); code >= 400 && code < 500 && code != 408 && code != 429 {
		return "its URL answers HTTP " + strconv.Itoa(code)
	}
	return ""
}

// isHostNotFound reports whether err is a DNS lookup that found no such host.
func isHostNotFound(err error) bool {
	dns, ok := errors.AsType[*net.DNSError](err)
	return ok && dns.IsNotFound
}

// isNotHTTP reports whether err is an HTTP request to a URL whose scheme
// is not http or https, which net/http refuses before sending anything
// ("unsupported protocol scheme").
func isNotHTTP(err error) bool {
	ue, ok := errors.AsType[*url.Error](err)
	if !ok {
		return false
	}
	u, perr := url.Parse(ue.URL)
	return perr == nil && u.Scheme != "http" && u.Scheme != "https"
}
