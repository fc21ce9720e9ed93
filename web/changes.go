package web

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// Change is what a request through the Server's routes may have changed,
// for the event streams (web/stream) to look again.
type Change struct {
	// User is the user whose state changed; "" means every user's.
	User string
	// ServersOnly says that only the servers' status may have changed (a
	// server action, a sign-in), not the user's trees or conversations.
	ServersOnly bool
}

// watch is the middleware that tells the watchers (Kit.Watch) of the
// changes a successful state-changing request may have made: its user's
// state when the route has a :user_id, every user's server status
// otherwise (the /api/servers actions connect gateways and count calls).
// It runs before every route.
func (s *Server) watch(c *gin.Context) {
	c.Next()
	if len(s.watchers) == 0 {
		return
	}
	switch c.Request.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return
	}
	if c.Writer.Status() >= http.StatusBadRequest || c.FullPath() == "" {
		return
	}
	user := c.Param("user_id")
	s.changed(Change{User: user, ServersOnly: user == ""})
}

// changed tells every watcher of ch.
func (s *Server) changed(ch Change) {
	for _, fn := range s.watchers {
		fn(ch)
	}
}
