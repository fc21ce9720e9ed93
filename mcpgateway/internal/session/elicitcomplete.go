package session

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
)

// ElicitationCompleter is implemented by the Emitter of a call whose caller
// is told when a server's url-mode elicitation completes: the aggregate
// MCP endpoint's client. When the server sends
// notifications/elicitation/complete for a url-mode question it asked
// during the call, even after the call ended, the gateway calls
// ElicitationComplete with the server's name and elicitationId (which the
// question's ElicitationPayload.ServerElicitationID carried). It must not
// block.
type ElicitationCompleter interface {
	ElicitationComplete(server, elicitationID string)
}

// completerKey is the context key of WithElicitationCompleter.
type completerKey struct{}

// WithElicitationCompleter marks the tool calls made with ctx as made for
// ec, when their Emitter is not one: the MCP client of the aggregate
// endpoint's ask tool, whose calls the decision tree makes and whose
// questions reach the client through the tree.
func WithElicitationCompleter(ctx context.Context, ec ElicitationCompleter) context.Context {
	return context.WithValue(ctx, completerKey{}, ec)
}

// completerOf returns whom to tell when a url-mode question of ac
// completes, or nil.
func completerOf(ac *activeCall) ElicitationCompleter {
	if ec, ok := ac.emit.(ElicitationCompleter); ok {
		return ec
	}
	ec, _ := ac.clock.ctx.Value(completerKey{}).(ElicitationCompleter)
	return ec
}

// maxPendingURLElicitations bounds the url-mode questions of one session
// whose completion is awaited; past it the oldest is forgotten.
const maxPendingURLElicitations = 64

// maxElicitationIDBytes bounds a server's elicitationId: a longer one is
// not relayed.
const maxElicitationIDBytes = 256

// urlElicitations are a session's url-mode questions awaiting the server's
// notifications/elicitation/complete, each with the caller to tell. It is
// safe for concurrent use.
type urlElicitations struct {
	mu    sync.Mutex
	order []string // ids, oldest first
	to    map[string]ElicitationCompleter
}

// add records that the caller of ec was asked url-mode question id.
func (u *urlElicitations) add(id string, ec ElicitationCompleter) {
	if id == "" || len(id) > maxElicitationIDBytes {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.to == nil {
		u.to = map[string]ElicitationCompleter{}
	}
	if _, dup := u.to[id]; !dup {
		u.order = append(u.order, id)
	}
	u.to[id] = ec
	for len(u.order) > maxPendingURLElicitations {
		delete(u.to, u.order[0])
		u.order = u.order[1:]
	}
}

// take forgets question id and returns whom to tell, or nil.
func (u *urlElicitations) take(id string) ElicitationCompleter {
	u.mu.Lock()
	defer u.mu.Unlock()
	ec := u.to[id]
	if ec != nil {
		delete(u.to, id)
		for i, o := range u.order {
			if o == id {
				u.order = append(u.order[:i], u.order[i+1:]...)
				break
			}
		}
	}
	return ec
}

// elicitationCompleted handles notifications/elicitation/complete: the
// caller that got the question is told; one for a question this session
// did not ask, or asked of a caller that cannot be told, is dropped.
func (c *Conn) elicitationCompleted(s *Session, n mcp.JSONRPCNotification) {
	b, err := json.Marshal(n.Params.AdditionalFields)
	if err != nil {
		return
	}
	var p struct {
		ElicitationID string `json:"elicitationId"`
	}
	if json.Unmarshal(b, &p) != nil {
		return
	}
	if ec := s.urls.take(p.ElicitationID); ec != nil {
		ec.ElicitationComplete(c.cfg.Name, p.ElicitationID)
		return
	}
	c.logger.Info("elicitation complete for a question not awaited: dropped")
}
