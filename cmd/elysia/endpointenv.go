package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/elysia-go/elysia/mcpendpoint"
)

// endpointEnv is one setting of the aggregate MCP endpoint read from the
// environment: its variable, what it sets, and its bounds.
type endpointEnv struct {
	name, what string
	// dur, when set, takes a duration within [minDur, maxDur]; else n
	// takes a whole number within [minN, maxN].
	dur            *time.Duration
	minDur, maxDur time.Duration
	n              *int64
	minN, maxN     int64
	def            string
}

// endpointSettings are the endpoint's settings of o, each with its variable.
// A typo must not make the endpoint refuse every list, keep sessions
// without end or take bodies of any size.
func endpointSettings(o *mcpendpoint.Options, maxSessions, maxBody *int64) []endpointEnv {
	return []endpointEnv{
		{name: "ELYSIA_MCP_ENDPOINT_LIST_TIMEOUT", what: "how long one server's part of a tools/list may take",
			dur: &o.ListTimeout, minDur: 100 * time.Millisecond, maxDur: 5 * time.Minute, def: mcpendpoint.DefaultListTimeout.String()},
		{name: "ELYSIA_MCP_ENDPOINT_SESSION_IDLE", what: "how long an MCP session stays open unused",
			dur: &o.SessionIdleTTL, minDur: time.Minute, maxDur: 7 * 24 * time.Hour, def: "30m"},
		{name: "ELYSIA_MCP_ENDPOINT_DEBOUNCE", what: "the quiet time before list_changed goes to every session",
			dur: &o.Debounce, minDur: 10 * time.Millisecond, maxDur: 10 * time.Second, def: mcpendpoint.DefaultDebounce.String()},
		{name: "ELYSIA_MCP_ENDPOINT_RESUME_WAIT", what: "how long a call whose stream dropped waits for its client to resume it before it is cancelled",
			dur: &o.ResumeWait, minDur: time.Second, maxDur: 10 * time.Minute, def: mcpendpoint.DefaultResumeWait.String()},
		{name: "ELYSIA_MCP_ENDPOINT_INPUT_WAIT", what: "how long a 2026-07-28 call that asked its client something waits for the answers before it is cancelled",
			dur: &o.InputWait, minDur: 5 * time.Second, maxDur: 30 * time.Minute, def: mcpendpoint.DefaultInputWait.String()},
		{name: "ELYSIA_MCP_ENDPOINT_LIST_TTL", what: "how long a 2026-07-28 client may keep a tools/list (its ttlMs)",
			dur: &o.ListTTL, minDur: time.Second, maxDur: time.Hour, def: mcpendpoint.DefaultListTTL.String()},
		{name: "ELYSIA_MCP_ENDPOINT_MAX_SESSIONS", what: "open MCP sessions (past it the least recently used ends)",
			n: maxSessions, minN: 1, maxN: 1_000_000, def: strconv.Itoa(mcpendpoint.DefaultMaxSessions)},
		{name: "ELYSIA_MCP_ENDPOINT_MAX_BODY_BYTES", what: "bytes of one request body",
			n: maxBody, minN: 4 << 10, maxN: 64 << 20, def: strconv.Itoa(mcpendpoint.DefaultMaxBodyBytes)},
	}
}

// endpointOptions reads the aggregate MCP endpoint's settings from the
// environment (ELYSIA_MCP_ENDPOINT_*; see endpointSettings). An unset or
// empty variable keeps the endpoint's default; a bad one is an error naming
// it, its bounds and its default.
func endpointOptions(lookup func(string) (string, bool)) (mcpendpoint.Options, error) {
	var o mcpendpoint.Options
	var maxSessions, maxBody int64
	for _, s := range endpointSettings(&o, &maxSessions, &maxBody) {
		v, ok := lookup(s.name)
		v = strings.TrimSpace(v)
		if !ok || v == "" {
			continue
		}
		if s.dur != nil {
			d, err := time.ParseDuration(v)
			if err != nil || d < s.minDur || d > s.maxDur {
				return o, fmt.Errorf("%s=%q: want a duration such as 30s or 5m, %v to %v, for %s (unset: %s)", s.name, v, s.minDur, s.maxDur, s.what, s.def)
			}
			*s.dur = d
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < s.minN || n > s.maxN {
			return o, fmt.Errorf("%s=%q: want a whole number, %d to %d, of %s (unset: %s)", s.name, v, s.minN, s.maxN, s.what, s.def)
		}
		*s.n = n
	}
	o.MaxSessions, o.MaxBodyBytes = int(maxSessions), maxBody
	return o, nil
}

// endpointEnvHelp lists the endpoint's variables for the help of the
// commands that serve it.
func endpointEnvHelp() string {
	var o mcpendpoint.Options
	var n1, n2 int64
	var b strings.Builder
	b.WriteString("The aggregate MCP endpoint's settings, from the environment:")
	for _, s := range endpointSettings(&o, &n1, &n2) {
		fmt.Fprintf(&b, "\n  %s: %s (default %s)", s.name, s.what, s.def)
	}
	return b.String()
}
