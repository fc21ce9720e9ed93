package session

import "github.com/elysia-go/elysia/tools"

// EventServerLog is the type of an event that carries one of the server's
// log messages (notifications/message) during a call, its payload a
// ServerLogPayload. Only a ClientLogger gets them.
const EventServerLog tools.EventType = "server_log"

// ServerLogPayload is the payload of an EventServerLog event: the message
// masked and cut as the server log keeps it, and the server that sent it.
type ServerLogPayload struct {
	Server string `json:"server"`
	LogEntry
}

// MaxCallClientLogs bounds the log messages passed to one call's
// ClientLogger; the others stay in the server log only.
const MaxCallClientLogs = 100

// ClientLogger is implemented by the Emitter of a call whose caller takes
// the server's log messages as they come, every level (the aggregate
// endpoint passes them to its MCP client at the level the client set):
// it gets each as an EventServerLog event, at most MaxCallClientLogs per
// call.
type ClientLogger interface {
	tools.Emitter
	TakesServerLogs()
}

// toClientLogger queues e for ac's ClientLogger, if it has one, within the
// call's cap. It never blocks.
func toClientLogger(ac *activeCall, e LogEntry) {
	if _, ok := ac.emit.(ClientLogger); !ok {
		return
	}
	ac.mu.Lock()
	ac.clientLogs++
	n := ac.clientLogs
	ac.mu.Unlock()
	if n <= MaxCallClientLogs {
		ac.relay.event(tools.Event{Type: EventServerLog, Payload: ServerLogPayload{Server: ac.server, LogEntry: e}})
	}
}
