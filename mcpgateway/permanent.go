package mcpgateway

import (
	"errors"
	"io/fs"
	"net"
	"os/exec"
	"regexp"
	"strings"
)

// status4xx finds an HTTP 4xx status in the text of a transport's error
// (mcp-go's errors carry it only as text).
var status4xx = regexp.MustCompile(`(?i)\bstatus(?: code)?:? (4\d\d)\b`)

// permanentFailure says why err fails again however often it is retried: a
// command that is not found or may not be run, a URL whose host does not
// exist or whose scheme is not HTTP, an HTTP 4xx answer (but 408 and 429).
// It is "" for a failure that may pass (a refused connection, a timeout,
// a crash, a 5xx).
func permanentFailure(err error) string {
	var dns *net.DNSError
	switch {
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, fs.ErrNotExist):
		return "its command was not found"
	case errors.Is(err, fs.ErrPermission), errors.Is(err, exec.ErrDot):
		return "its command may not be run"
	case errors.As(err, &dns) && dns.IsNotFound:
		return "the host of its URL does not exist"
	case strings.Contains(err.Error(), "unsupported protocol scheme"):
		return "its URL is not an http or https URL"
	}
	if m := status4xx.FindStringSubmatch(err.Error()); m != nil && m[1] != "408" && m[1] != "429" {
		return "its URL answers HTTP " + m[1]
	}
	return ""
}
