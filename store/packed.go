package store

import (
	"encoding/json"
	"errors"
)

// errNotPacked is the error of a packed events row that is not a JSON array.
var errNotPacked = errors.New("not a JSON array of events")

// splitPacked returns the elements of packed, a JSON array as packEvents
// writes it, each as it was written (without the whitespace around it).
// It splits, it does not check: the save checked each event. The elements
// share packed's memory, each capped at its end.
func splitPacked(packed []byte) ([]json.RawMessage, error) {
	s := trimSpace(packed)
	if len(s) < 2 || s[0] != '[' || s[len(s)-1] != ']' {
		return nil, errNotPacked
	}
	s = s[1 : len(s)-1]
	var out []json.RawMessage
	depth, start, inString := 0, 0, false
	cut := func(end int) error {
		e := trimSpace(s[start:end])
		if len(e) == 0 {
			return errNotPacked
		}
		out = append(out, json.RawMessage(e[:len(e):len(e)]))
		start = end + 1
		return nil
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth < 0 {
				return nil, errNotPacked
			}
		case ',':
			if depth == 0 {
				if err := cut(i); err != nil {
					return nil, err
				}
			}
		}
	}
	if inString || depth != 0 {
		return nil, errNotPacked
	}
	if len(out) == 0 && len(trimSpace(s)) == 0 {
		return []json.RawMessage{}, nil
	}
	if err := cut(len(s)); err != nil {
		return nil, err
	}
	return out, nil
}

// trimSpace trims JSON's whitespace from both ends of b.
func trimSpace(b []byte) []byte {
	isSpace := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}
