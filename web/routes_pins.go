package web

import (
	"context"
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"
)

// ServerPins is implemented by Servers whose gateways pin their tools'
// definitions: it approves a changed or new tool, or forgets a server's
// pins. POST /api/servers/:name/pins needs it. Safe for concurrent use.
type ServerPins interface {
	// ApprovePins pins the current definitions of the server's tools
	// (of every changed or new one when tools is empty) and returns the
	// tools approved. A server with nothing waiting, or a tool not
	// waiting, is an error matching ErrNothingPending; an unknown server,
	// tree.ErrNotFound.
	ApprovePins(ctx context.Context, name string, tools []string) ([]string, error)
	// ResetPins forgets the server's pins (its next listing pins afresh)
	// and returns how many it removed.
	ResetPins(ctx context.Context, name string) (int, error)
}

// ErrNothingPending is matched by the error of ServerPins.ApprovePins
// when nothing it was asked to approve is waiting. It maps to 409, and
// its text is shown.
var ErrNothingPending = errors.New("nothing waiting for approval")

// PinsRequest is the body of POST /api/servers/:name/pins:
// {"action": "approve", "tools": [...]} (every waiting tool when tools is
// empty) or {"action": "reset"}.
type PinsRequest struct {
	Action string   `json:"action"`
	Tools  []string `json:"tools,omitempty"`
}

// serverPins serves POST /api/servers/:name/pins (admin only on a keyed
// service).
func (s *Server) serverPins(c *gin.Context) {
	sp, has := s.deps.Servers.(ServerPins)
	if !has {
		s.fail(c, &requestError{http.StatusNotFound, "this service does not pin tools"}, nil)
		return
	}
	var body PinsRequest
	if err := s.decode(c, &body, false, "action"); err != nil {
		s.fail(c, err, nil)
		return
	}
	ctx, name := c.Request.Context(), c.Param("name")
	switch body.Action {
	case "approve":
		approved, err := sp.ApprovePins(ctx, name, body.Tools)
		if errors.Is(err, ErrNothingPending) {
			err = &requestError{http.StatusConflict, err.Error()}
		}
		if err != nil {
			s.failServer(c, err, nil)
			return
		}
		writeJSON(c, http.StatusOK, ok(kv("approved", approved)))
	case "reset":
		if len(body.Tools) > 0 {
			s.fail(c, badRequest(`"reset" forgets all of a server's pins: give no tools`), nil)
			return
		}
		n, err := sp.ResetPins(ctx, name)
		if err != nil {
			s.failServer(c, err, nil)
			return
		}
		writeJSON(c, http.StatusOK, ok(kv("removed", n)))
	default:
		s.fail(c, badRequest(`action must be "approve" or "reset"`), nil)
	}
}
