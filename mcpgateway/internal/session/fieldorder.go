package session

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"sync"
)

// Bounds of the form-order sniffing: the forms remembered per session, and
// the longest message looked at (a form is small; a longer line is passed
// on unread).
const (
	maxFieldOrders = 8
	maxSniffLine   = 64 << 10
)

// fieldOrders keeps the property order of the forms (elicitation/create) a
// server sent (a stdio line, or an SSE data line of an HTTP response). mcp-go decodes requestedSchema into a map, which loses
// the order the server gave its fields; the raw line still has it.
type fieldOrders struct {
	mu     sync.Mutex
	recent [][]string // newest last
}

// line records the property order of a raw message, when it is a form.
func (o *fieldOrders) line(b []byte) {
	if !bytes.Contains(b, []byte(`"elicitation/create"`)) {
		return
	}
	if rest, ok := bytes.CutPrefix(b, []byte("data:")); ok { // an SSE event's data
		b = rest
	}
	var msg struct {
		Method string `json:"method"`
		Params struct {
			RequestedSchema struct {
				Properties json.RawMessage `json:"properties"`
			} `json:"requestedSchema"`
		} `json:"params"`
	}
	if json.Unmarshal(b, &msg) != nil || msg.Method != "elicitation/create" {
		return
	}
	keys := objectKeys(msg.Params.RequestedSchema.Properties)
	if len(keys) == 0 {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.recent = append(o.recent, keys)
	if len(o.recent) > maxFieldOrders {
		o.recent = slices.Delete(o.recent, 0, 1)
	}
}

// take returns, and forgets, the newest recorded order whose names are
// exactly the properties of schema; nil when none is.
func (o *fieldOrders) take(schema map[string]any) []string {
	props, _ := schema["properties"].(map[string]any)
	o.mu.Lock()
	defer o.mu.Unlock()
	for i := len(o.recent) - 1; i >= 0; i-- {
		keys := o.recent[i]
		if len(keys) != len(props) {
			continue
		}
		all := true
		for _, k := range keys {
			if _, ok := props[k]; !ok {
				all = false
				break
			}
		}
		if all {
			o.recent = slices.Delete(o.recent, i, i+1)
			return keys
		}
	}
	return nil
}

// sniff records the order of a line of a stdio server, when it is a form
// no longer than maxSniffLine (as a lineSniffer does).
func (o *fieldOrders) sniff(line []byte) {
	if len(line) > 0 && len(line) <= maxSniffLine {
		o.line(line)
	}
}

// objectKeys returns the keys of a JSON object in their order, or nil
// when raw is not an object or names a key twice.
func objectKeys(raw json.RawMessage) []string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		name, _ := tok.(string)
		if slices.Contains(keys, name) {
			return nil
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return nil
		}
		keys = append(keys, name)
	}
	return keys
}

// lineSniffer passes a server's output through unchanged and hands
// each line up to maxSniffLine long to line, before the reader after it
// sees the line's end.
type lineSniffer struct {
	r    io.Reader
	line func([]byte)
	buf  []byte
	over bool // the current line is longer than maxSniffLine
}

func (s *lineSniffer) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	rest := p[:n]
	for len(rest) > 0 {
		seg, after, found := bytes.Cut(rest, []byte{'\n'})
		if !s.over {
			if len(s.buf)+len(seg) > maxSniffLine {
				s.over, s.buf = true, s.buf[:0]
			} else {
				s.buf = append(s.buf, seg...)
			}
		}
		if !found {
			break
		}
		if !s.over && len(s.buf) > 0 {
			s.line(s.buf)
		}
		s.buf, s.over = s.buf[:0], false
		rest = after
	}
	return n, err
}

// sniffedBody is an HTTP response body read through a lineSniffer.
type sniffedBody struct {
	io.Reader
	io.Closer
}
