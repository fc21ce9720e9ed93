package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
)

// Marshal is json.Marshal without HTML escaping: the wire form of
// envelopes, payloads and responses. encoding/json writes "<", ">" and "&"
// as \u003c, \u003e and \u0026 for the sake of JSON pasted into HTML; none
// of ours is, and a schema error such as "/priority: must be <= 5" should
// read the same on the wire as in DESIGN.md's examples.
func Marshal(v any) ([]byte, error) {
	return appendMarshal(nil, v)
}

// WriteJSONString writes s to b as a JSON string, byte for byte as Marshal
// writes it: a plain s (PlainJSONString) as it is, between quotes; else
// escaped in b's own room, grown for the worst case first.
func WriteJSONString(b *bytes.Buffer, s string) {
	if PlainJSONString(s) {
		b.Grow(len(s) + 2)
		b.WriteByte('"')
		b.WriteString(s)
		b.WriteByte('"')
		return
	}
	b.Grow(2*len(s) + 2)
	b.Write(AppendJSONString(b.AvailableBuffer(), s, false))
}

// PlainJSONString reports whether s needs no escaping in JSON, so that its
// JSON form is s between quotes. <, > and & are plain: Marshal does not
// escape them for HTML.
func PlainJSONString(s string) bool { return plainJSON(s, &jsonEscape) }

// appendMarshal appends what Marshal returns for v to dst.
func appendMarshal(dst []byte, v any) ([]byte, error) {
	m := marshalers.Get().(*marshaler)
	if err := m.enc.Encode(v); err != nil {
		return nil, err // m is dropped: it may hold half a value
	}
	enc := bytes.TrimSuffix(m.buf.Bytes(), []byte("\n"))
	if dst == nil {
		dst = bytes.Clone(enc)
	} else {
		dst = append(dst, enc...)
	}
	if m.buf.Cap() <= maxPooledMarshal {
		m.buf.Reset()
		marshalers.Put(m)
	}
	return dst, nil
}

// maxPooledMarshal is the largest buffer Marshal keeps for the next call:
// a rare large value should not pin its buffer.
const maxPooledMarshal = 64 << 10

// marshaler is an encoder with its buffer, which Marshal reuses between
// calls: a fresh buffer grows by doubling, allocating about twice the
// output again, and its slack was kept by whoever held the result.
type marshaler struct {
	buf bytes.Buffer
	enc *json.Encoder
}

var marshalers = sync.Pool{New: func() any {
	m := &marshaler{}
	m.enc = json.NewEncoder(&m.buf)
	m.enc.SetEscapeHTML(false)
	return m
}}

// Object is a JSON object that keeps its members in the order given, where
// a map would sort them: DESIGN.md's examples put "error" first, and a
// catalogue of tools reads best in the order they are offered. Values are
// marshalled with Marshal.
type Object []Member

// Member is one key and value of an Object.
type Member struct {
	Key   string
	Value any
}

// MarshalJSON writes the members in order.
func (o Object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := Marshal(m.Key)
		if err != nil {
			return nil, err
		}
		v, err := Marshal(m.Value)
		if err != nil {
			return nil, fmt.Errorf("member %s: %w", k, err)
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
