package sessions

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/elysia-go/elysia/mcpendpoint/internal/jsonrpc"
	"github.com/elysia-go/elysia/mcpendpoint/internal/sse"
)

// Each replica's mcp-go numbers the requests it puts to clients
// (elicitation, sampling, roots) from 1, so two replicas put requests with
// the same id to one session, and the client's answer, which a load
// balancer may send to either, could be taken by the wrong one. With a
// Relay, the endpoint therefore tags the id of every request it puts to a
// client with the replica's own random tag ("<tag>.<n>", a JSON-RPC
// string id) on the way out, and an answer naming it goes to that replica
// only, its id given back as the number mcp-go waits for.

// replicaTagLen is the length of a replica's tag: 6 random bytes in hex.
const replicaTagLen = 12

// NewReplicaTag returns a fresh random replica tag.
func NewReplicaTag() string {
	var raw [replicaTagLen / 2]byte
	_, _ = rand.Read(raw[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(raw[:])
}

// tagsIDs reports whether the endpoint tags request ids: with a Relay,
// where other replicas may put requests to the same session.
func (h *Hub) tagsIDs() bool { return h.Relay != nil }

// TagIDs returns w tagging the ids of the requests mcp-go writes on it to
// the client, when the endpoint tags them (with a Relay), else w.
func (h *Hub) TagIDs(w http.ResponseWriter) http.ResponseWriter {
	if !h.tagsIDs() {
		return w
	}
	return &tagWriter{ResponseWriter: w, hub: h}
}

// tagRequest returns msg with its id tagged when it is a request with a
// number id (mcp-go's), else msg unchanged.
func (h *Hub) tagRequest(msg []byte) []byte {
	if !bytes.Contains(msg, []byte(`"method"`)) || !bytes.Contains(msg, []byte(`"id"`)) {
		return msg // the cheap test: notifications and answers
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(msg, &m) != nil || m["method"] == nil {
		return msg
	}
	n, err := strconv.ParseInt(string(m["id"]), 10, 64)
	if err != nil {
		return msg
	}
	m["id"], _ = json.Marshal(h.Tag + "." + strconv.FormatInt(n, 10))
	out, err := json.Marshal(m)
	if err != nil {
		return msg
	}
	return out
}

// untagAnswer reads the id of a client's answer: mine reports whether it
// names a request of this replica (its body then carries the number
// mcp-go waits for), elsewhere whether it names another replica's. An id
// without a tag is neither.
func (h *Hub) untagAnswer(body []byte, m *jsonrpc.Message) (out []byte, mine, elsewhere bool) {
	var id string
	if json.Unmarshal(m.ID, &id) != nil {
		return body, false, false // a number: untagged
	}
	tag, num, ok := strings.Cut(id, ".")
	n, err := strconv.ParseInt(num, 10, 64)
	if !ok || len(tag) != replicaTagLen || err != nil {
		return body, false, false
	}
	if tag != h.Tag {
		return nil, false, true
	}
	return m.WithID(json.RawMessage(strconv.FormatInt(n, 10))), true, false
}

// tagWriter tags the ids of the requests in the event stream mcp-go
// writes to a client (the GET stream, or a POST it answers with events);
// anything else passes as it is.
type tagWriter struct {
	http.ResponseWriter
	hub    *Hub
	events bool   // the answer is an event stream
	buf    []byte // an event not yet complete
}

// WriteHeader notes whether the answer is an event stream.
func (w *tagWriter) WriteHeader(code int) {
	w.events = strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream")
	w.ResponseWriter.WriteHeader(code)
}

// Write passes b on, each complete event with its request's id tagged.
func (w *tagWriter) Write(b []byte) (int, error) {
	if !w.events {
		return w.ResponseWriter.Write(b)
	}
	w.buf = append(w.buf, b...)
	for {
		ev, raw, rest, ok := sse.Next(w.buf)
		if !ok {
			return len(b), nil
		}
		if bytes.Contains(raw, []byte(`"method"`)) {
			if data := w.hub.tagRequest(ev.Data); !bytes.Equal(data, ev.Data) {
				ev.Data = data
				raw = sse.Append(nil, ev)
			}
		}
		if _, err := w.ResponseWriter.Write(raw); err != nil {
			return 0, err
		}
		w.buf = rest
	}
}

// Flush flushes the underlying writer.
func (w *tagWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *tagWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
