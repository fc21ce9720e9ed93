package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/elysia-go/elysia/mcpgateway"
)

// Bounds of the per-user session settings: a typo must not open a
// process per user without end, nor keep a user's call waiting for hours.
const (
	maxMaxUsers = 10000
	maxUserIdle = 24 * time.Hour
	maxUserWait = 10 * time.Minute
)

// perUserOptions reads the settings of per-user servers into o:
// ELYSIA_MCP_MAX_USERS (users' sessions per server, 1 to 10000; unset:
// 100), ELYSIA_MCP_USER_IDLE (a user's session closes after that long
// without a call, 1s to 24h; unset: 15m) and ELYSIA_MCP_USER_WAIT (how long
// a new user's call waits when every session is busy, 1s to 10m; unset:
// 10s). They apply to every per-user server of the service.
func perUserOptions(lookup func(string) (string, bool), o *mcpgateway.Options) error {
	if v, ok := lookup("ELYSIA_MCP_MAX_USERS"); ok && strings.TrimSpace(v) != "" {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 || n > maxMaxUsers {
			return fmt.Errorf("ELYSIA_MCP_MAX_USERS=%q: want a whole number of users' sessions per server, 1 to %d (unset: 100)", v, maxMaxUsers)
		}
		o.MaxUsers = n
	}
	for _, d := range []struct {
		env      string
		dst      *time.Duration
		max      time.Duration
		def, was string
	}{
		{"ELYSIA_MCP_USER_IDLE", &o.UserIdle, maxUserIdle, "15m", "how long a user's session stays open without a call"},
		{"ELYSIA_MCP_USER_WAIT", &o.UserWait, maxUserWait, "10s", "how long a new user's call waits when every session is busy"},
	} {
		v, ok := lookup(d.env)
		if !ok || strings.TrimSpace(v) == "" {
			continue
		}
		t, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || t < time.Second || t > d.max {
			return fmt.Errorf("%s=%q: want a duration such as 30s or 5m, 1s to %v, for %s (unset: %s)", d.env, v, d.max, d.was, d.def)
		}
		*d.dst = t
	}
	return nil
}
