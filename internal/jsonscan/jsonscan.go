// Package jsonscan walks JSON that json.Valid has passed, finding where
// members and elements are without decoding them: for decoders that read a
// few members of a message and pass the rest on as sent. Every function
// takes valid JSON; on anything else its results are undefined (but it
// never reads past the slice it is given).
package jsonscan

import (
	"bytes"
	"encoding/json"
	"iter"
	"unicode/utf8"
)

// Members yields the members of the object obj: each key's raw contents
// (between the quotes, escapes left as sent) and its raw value.
func Members(obj []byte) iter.Seq2[[]byte, []byte] {
	return func(yield func(key, val []byte) bool) {
		i := SkipSpace(obj, 0)
		if i >= len(obj) || obj[i] != '{' {
			return
		}
		i = SkipSpace(obj, i+1)
		for i < len(obj) && obj[i] == '"' {
			keyEnd := skipString(obj, i)
			key := obj[i+1 : keyEnd-1]
			v := SkipSpace(obj, SkipSpace(obj, keyEnd)+1) // past the colon
			end := SkipValue(obj, v)
			if !yield(key, obj[v:end]) {
				return
			}
			i = SkipSpace(obj, end)
			if i < len(obj) && obj[i] == ',' {
				i = SkipSpace(obj, i+1)
			}
		}
	}
}

// Elements yields the raw elements of the array arr.
func Elements(arr []byte) iter.Seq[[]byte] {
	return func(yield func(el []byte) bool) {
		i := SkipSpace(arr, 0)
		if i >= len(arr) || arr[i] != '[' {
			return
		}
		i = SkipSpace(arr, i+1)
		for i < len(arr) && arr[i] != ']' {
			end := SkipValue(arr, i)
			if !yield(arr[i:end]) {
				return
			}
			i = SkipSpace(arr, end)
			if i < len(arr) && arr[i] == ',' {
				i = SkipSpace(arr, i+1)
			}
		}
	}
}

// Plain returns the contents of the string val when they are its value:
// nothing escaped, and valid UTF-8 (which encoding/json would keep as it
// is). ok is false for any other value.
func Plain(val []byte) (s []byte, ok bool) {
	if len(val) < 2 || val[0] != '"' {
		return nil, false
	}
	s = val[1 : len(val)-1]
	if bytes.IndexByte(s, '\\') >= 0 || !utf8.Valid(s) {
		return nil, false
	}
	return s, true
}

// SkipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func SkipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// skipString returns the index just past the string that opens at i.
func skipString(b []byte, i int) int {
	i++
	for i < len(b) {
		j := bytes.IndexAny(b[i:], `"\`)
		if j < 0 {
			return len(b)
		}
		i += j
		if b[i] == '"' {
			return i + 1
		}
		i += 2 // a backslash and the byte it escapes
	}
	return len(b)
}

// SkipValue returns the index just past the value that starts at i.
func SkipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	for i < len(b) {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return i
		}
		i++
	}
	return i
}

// Value decodes the value val as encoding/json decodes it into an any with
// UseNumber: objects as map[string]any (a key named twice counts as its
// last), arrays as []any, numbers as json.Number, strings unescaped (an
// invalid byte as U+FFFD). val must be one valid JSON value.
func Value(val []byte) any {
	switch val[0] {
	case '{':
		m := make(map[string]any)
		for key, v := range Members(val) {
			m[Unquote(key)] = Value(v)
		}
		return m
	case '[':
		a := []any{}
		for el := range Elements(val) {
			a = append(a, Value(el))
		}
		return a
	case '"':
		return Unquote(val[1 : len(val)-1])
	case 't':
		return true
	case 'f':
		return false
	case 'n':
		return nil
	}
	return json.Number(val)
}

// Unquote returns the value of a string's raw contents (between its
// quotes, as Members gives a key): unescaped, an invalid byte as U+FFFD.
func Unquote(raw []byte) string {
	if bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return string(raw)
	}
	var s string
	_ = json.Unmarshal(append(append([]byte{'"'}, raw...), '"'), &s) // valid: it came from valid JSON
	return s
}

// MayName reports whether the raw key may name one of names as
// encoding/json matches a struct's fields, without regard to case; a key
// with escapes or outside ASCII is taken to (the caller then decodes the
// object through encoding/json).
func MayName(key []byte, names ...string) bool {
	for _, c := range key {
		if c == '\\' || c >= utf8.RuneSelf {
			return true
		}
	}
	for _, n := range names {
		if len(key) == len(n) && bytes.EqualFold(key, []byte(n)) {
			return true
		}
	}
	return false
}
