package tools

import (
	"bytes"
	"encoding/json"
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
