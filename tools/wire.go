package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Marshal is json.Marshal without HTML escaping: the wire form of
// envelopes, payloads and responses. encoding/json writes "<", ">" and "&"
// as \u003c, \u003e and \u0026 for the sake of JSON pasted into HTML; none
// of ours is, and a schema error such as "/priority: must be <= 5" should
// read the same on the wire as in DESIGN.md's examples.
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

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
