package web

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"sync"

	"github.com/gin-gonic/gin"

	"github.com/elysia-go/elysia/tools"
)

// object is a response body with its keys in order ("error" first, as in
// DESIGN.md's examples); field is one of its members.
type (
	object = tools.Object
	field  = tools.Member
)

// kv is one member of a response body.
func kv(key string, value any) field { return field{Key: key, Value: value} }

// ok is the body of a successful JSON answer: "error": "" and then fields.
func ok(fields ...field) object {
	return append(object{kv("error", "")}, fields...)
}

// writeJSON answers with status and body, without HTML escaping ("<= 5"
// stays "<= 5"). A body that cannot be marshalled is a bug of this
// service: 500 with a generic message.
//
// The body is written member by member into a pooled buffer: through
// tools.Marshal, body.MarshalJSON's output would be scanned and compacted
// again by encoding/json, the whole answer once more. A nested object is
// written the same way, and a json.RawMessage member as it is: it must be
// JSON already (ours: a tree, a marshalled value).
func writeJSON(c *gin.Context, status int, body object) {
	buf := jsonBuffers.Get().(*bytes.Buffer)
	buf.Reset()
	if err := appendObject(buf, body); err != nil {
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString(`{"error":"internal error: response not encodable"}`)
	}
	c.Data(status, "application/json; charset=utf-8", buf.Bytes()) // written before it returns
	if buf.Cap() <= maxPooledJSON {
		jsonBuffers.Put(buf)
	}
}

// appendObject writes o to buf as tools.Marshal would.
func appendObject(buf *bytes.Buffer, o object) error {
	buf.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			buf.WriteByte(',')
		}
		tools.WriteJSONString(buf, m.Key)
		buf.WriteByte(':')
		switch v := m.Value.(type) {
		case object:
			if err := appendObject(buf, v); err != nil {
				return err
			}
		case json.RawMessage:
			if v == nil {
				buf.WriteString("null")
			}
			buf.Write(v)
		case string:
			tools.WriteJSONString(buf, v)
		case ExecuteResult:
			if err := v.appendJSON(buf); err != nil {
				return err
			}
		default:
			if err := appendValue(buf, v); err != nil {
				return err
			}
		}
	}
	buf.WriteByte('}')
	return nil
}

// jsonBuffers are writeJSON's buffers; one over maxPooledJSON is dropped,
// so that a rare large answer does not pin its size.
var jsonBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxPooledJSON = 64 << 10

// appendJSON writes r as tools.Marshal would, byte for byte, without
// reflection over the result and its content items: the answer of every
// execute. A value in an item other than a string, and structured content
// that is not JSON already, go through tools.Marshal.
func (r ExecuteResult) appendJSON(buf *bytes.Buffer) error {
	buf.WriteString(`{"is_error":`)
	buf.WriteString(strconv.FormatBool(r.IsError))
	buf.WriteString(`,"content":`)
	if r.Content == nil {
		buf.WriteString("null")
	} else {
		buf.WriteByte('[')
		for i, item := range r.Content {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := appendMap(buf, item); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	}
	buf.WriteString(`,"structured":`)
	switch v := r.Structured.(type) {
	case nil:
		buf.WriteString("null")
	case json.RawMessage:
		if v == nil {
			buf.WriteString("null")
		} else if err := json.Compact(buf, v); err != nil { // as encoding/json writes a RawMessage
			return err
		}
	default:
		if err := appendValue(buf, v); err != nil {
			return err
		}
	}
	buf.WriteByte('}')
	return nil
}

// appendMap writes m as encoding/json does: keys sorted, null for nil.
func appendMap(buf *bytes.Buffer, m map[string]any) error {
	if m == nil {
		buf.WriteString("null")
		return nil
	}
	var small [8]string
	keys := small[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	buf.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			buf.WriteByte(',')
		}
		tools.WriteJSONString(buf, k)
		buf.WriteByte(':')
		if s, ok := m[k].(string); ok {
			tools.WriteJSONString(buf, s)
		} else if err := appendValue(buf, m[k]); err != nil {
			return err
		}
	}
	buf.WriteByte('}')
	return nil
}

// appendValue writes v through tools.Marshal.
func appendValue(buf *bytes.Buffer, v any) error {
	b, err := tools.Marshal(v)
	if err != nil {
		return err
	}
	buf.Write(b)
	return nil
}
