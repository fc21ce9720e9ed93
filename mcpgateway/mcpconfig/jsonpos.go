package mcpconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/tailscale/hujson"
)

// maxJSONDepth bounds nesting so a hostile file cannot exhaust the stack;
// mcp.json needs four or five levels.
const maxJSONDepth = 256

// jkind is the kind of a JSON value.
type jkind uint8

const (
	jObject jkind = iota
	jArray
	jString
	jNumber
	jBool
	jNull
)

// String names the kind as error messages do ("an object", ...).
func (k jkind) String() string {
	return [...]string{"an object", "an array", "a string", "a number", "a boolean", "null"}[k]
}

// jnode is one JSON value with its byte offset. Unlike a map from
// encoding/json, an object keeps its members in file order.
type jnode struct {
	kind    jkind
	off     int
	str     string // string value, or the text of a number
	boolean bool
	members []jmember // object members in file order, duplicates removed
	elems   []*jnode
}

// jmember is one key of an object.
type jmember struct {
	key    string
	keyOff int
	val    *jnode
}

// offsetError is a problem at a byte offset of the decoded data.
type offsetError struct {
	off   int
	msg   string
	first int // for a duplicate key, the offset of the first; else -1
}

// treeDecoder turns a JSON document into a jnode tree using a json.Decoder
// token walk, which keeps object order and gives offsets.
type treeDecoder struct {
	dec  *json.Decoder
	data []byte
	dups []offsetError // duplicate keys; not fatal to the walk
}

// decodeTree decodes data (JSON with optional comments and trailing commas,
// as VS Code allows) into a tree. A syntax error is returned as the only
// error; duplicate keys are all returned, and the tree keeps the first
// occurrence of each.
func decodeTree(data []byte) (*jnode, []offsetError) {
	clean := toJSON(data)
	d := &treeDecoder{dec: json.NewDecoder(bytes.NewReader(clean)), data: clean}
	d.dec.UseNumber()
	if d.next() >= len(clean) {
		return nil, []offsetError{{0, "empty file: want a JSON object or array", -1}}
	}
	root, err := d.value(0)
	if err != nil {
		return nil, []offsetError{*err}
	}
	if off := d.next(); off < len(clean) {
		return nil, []offsetError{{off, "invalid JSON: unexpected data after the top-level value", -1}}
	}
	return root, d.dups
}

// next returns the offset where the next token starts: the decoder's offset
// moved past white space and the separators it consumes silently.
func (d *treeDecoder) next() int {
	i := int(d.dec.InputOffset())
	for i < len(d.data) && strings.IndexByte(" \t\r\n,:", d.data[i]) >= 0 {
		i++
	}
	return i
}

func (d *treeDecoder) token() (json.Token, *offsetError) {
	prev, start := int(d.dec.InputOffset()), d.next()
	tok, err := d.dec.Token()
	if err == nil {
		return tok, nil
	}
	eof := &offsetError{len(d.data), "invalid JSON: unexpected end of file", -1}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, eof
	}
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return nil, &offsetError{prev, "invalid JSON: " + err.Error(), -1}
	}
	off, ok := syntaxErrorAt(d.data, prev, int(d.dec.InputOffset()), start+int(se.Offset)-1, int(se.Offset))
	if !ok {
		return nil, eof // jsonv2 reports the end of the input as a syntax error
	}
	msg := "invalid JSON: " + se.Error()
	if strings.Contains(msg, "after object key:value pair") || strings.Contains(msg, "after array element") {
		msg += " (missing comma?)"
	}
	return nil, &offsetError{off, msg, -1}
}

// syntaxErrorAt returns the offset of the byte that makes data invalid
// JSON, given that data[:from] is a valid start. encoding/json's
// SyntaxError.Offset means different things in a token stream (the
// offending byte, or a count from the start of the current value) and in
// GOEXPERIMENT=jsonv2 (the offending byte), so the offset is measured,
// not read: the shortest prefix of data with a syntax error ends with the
// offending byte. The hints, where the decoder's offsets may put it, are
// checked first (two scans each); a binary search is the fallback. It
// reports false when data is only cut short.
func syntaxErrorAt(data []byte, from int, hints ...int) (int, bool) {
	if !syntaxErrorIn(data) {
		return 0, false
	}
	for _, h := range hints {
		if h >= from && h < len(data) && syntaxErrorIn(data[:h+1]) && !syntaxErrorIn(data[:h]) {
			return h, true
		}
	}
	n := from + sort.Search(len(data)-from, func(i int) bool { return syntaxErrorIn(data[:from+i+1]) })
	return n, true
}

// syntaxErrorIn reports whether data has a syntax error before its end
// (data only cut short has none). It scans values whole, which is much
// faster than a token walk.
func syntaxErrorIn(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		var v json.RawMessage
		err := dec.Decode(&v)
		var se *json.SyntaxError
		switch {
		case err == nil:
		case errors.As(err, &se):
			return !endIsSyntaxError || se.Offset < int64(len(data))
		default:
			return false
		}
	}
}

// endIsSyntaxError tells how the decoder reports input cut short: as
// io.ErrUnexpectedEOF (encoding/json), or as a *SyntaxError at the end of
// the input (GOEXPERIMENT=jsonv2).
var endIsSyntaxError = func() bool {
	var se *json.SyntaxError
	return errors.As(json.NewDecoder(strings.NewReader("[")).Decode(new(json.RawMessage)), &se)
}()

func (d *treeDecoder) value(depth int) (*jnode, *offsetError) {
	off := d.next()
	if depth > maxJSONDepth {
		return nil, &offsetError{off, fmt.Sprintf("nesting deeper than %d levels", maxJSONDepth), -1}
	}
	tok, err := d.token()
	if err != nil {
		return nil, err
	}
	n := &jnode{off: off}
	switch t := tok.(type) {
	case json.Delim:
		if t == '[' {
			n.kind = jArray
			for d.dec.More() {
				e, err := d.value(depth + 1)
				if err != nil {
					return nil, err
				}
				n.elems = append(n.elems, e)
			}
		} else {
			n.kind = jObject
			seen := make(map[string]int)
			for d.dec.More() {
				keyOff := d.next()
				k, err := d.token()
				if err != nil {
					return nil, err
				}
				key, _ := k.(string) // the decoder only yields strings here
				v, err := d.value(depth + 1)
				if err != nil {
					return nil, err
				}
				if first, ok := seen[key]; ok {
					d.dups = append(d.dups, offsetError{keyOff, fmt.Sprintf("key %q given twice in the same object", key), first})
					continue
				}
				seen[key] = keyOff
				n.members = append(n.members, jmember{key, keyOff, v})
			}
		}
		if _, err := d.token(); err != nil { // the closing delimiter
			return nil, err
		}
	case string:
		n.kind, n.str = jString, t
	case json.Number:
		n.kind, n.str = jNumber, string(t)
	case bool:
		n.kind, n.boolean = jBool, t
	case nil:
		n.kind = jNull
	}
	return n, nil
}

// lineIndex converts byte offsets to positions in O(log lines), and counts
// columns from the previous answer when it can, since offsets mostly come
// in file order (a minified file is one long line).
type lineIndex struct {
	data   []byte
	starts []int // offset of the first byte of each line

	lastLine, lastOff, lastCol int
}

func newLineIndex(data []byte) *lineIndex {
	li := &lineIndex{data: data, starts: []int{0}}
	for i, c := range data {
		if c == '\n' {
			li.starts = append(li.starts, i+1)
		}
	}
	return li
}

// position converts a byte offset to a 1-based line and a 1-based column
// counted in characters.
func (li *lineIndex) position(off int) (line, col int) {
	off = min(max(off, 0), len(li.data))
	line, _ = slices.BinarySearch(li.starts, off+1) // first start > off
	from, col := li.starts[line-1], 1
	if line == li.lastLine && off >= li.lastOff {
		from, col = li.lastOff, li.lastCol
	}
	col += utf8.RuneCount(li.data[from:off])
	li.lastLine, li.lastOff, li.lastCol = line, off, col
	return line, col
}

// stringOffset returns the offset in the file of byte i of the value of
// the JSON string whose opening quote is at quote, so that an error about
// part of a value ("${foo}" in the middle of it) points at that part:
// escapes take more room in the file than in the value.
func (li *lineIndex) stringOffset(quote, i int) int {
	d := li.data
	if quote < 0 || quote >= len(d) || d[quote] != '"' {
		return quote
	}
	off := quote + 1
	for n := 0; n < i && off < len(d); {
		switch {
		case d[off] != '\\':
			off++
			n++
		case off+1 < len(d) && d[off+1] == 'u':
			r := hexRune(d, off+2)
			off += 6
			if utf16.IsSurrogate(r) && off+1 < len(d) && d[off] == '\\' && d[off+1] == 'u' {
				r = utf16.DecodeRune(r, hexRune(d, off+2))
				off += 6
			}
			if l := utf8.RuneLen(r); l > 0 {
				n += l
			} else {
				n += utf8.RuneLen(utf8.RuneError)
			}
		default:
			off += 2
			n++
		}
	}
	return min(off, len(d))
}

// hexRune reads the four hex digits of a \u escape at d[at:], or
// utf8.RuneError.
func hexRune(d []byte, at int) rune {
	if at+4 > len(d) {
		return utf8.RuneError
	}
	v, err := strconv.ParseUint(string(d[at:at+4]), 16, 32)
	if err != nil {
		return utf8.RuneError
	}
	return rune(v)
}

// toJSON turns JSONC (JSON with comments and trailing commas, as VS Code
// allows) into JSON by blanking them with spaces, keeping every offset and
// newline so positions still point into the original text.
func toJSON(data []byte) []byte {
	// hujson wants a line comment to end in a newline; it aliases and
	// rewrites its input, hence the copy.
	if out, err := hujson.Standardize(append(bytes.Clone(data), '\n')); err == nil && len(out) == len(data)+1 {
		return out[:len(data)]
	}
	return blankToError(data)
}

// maxJSONCSkips bounds how many comments and trailing commas of an invalid
// file blankToError skips, each costing a decode of the file.
const maxJSONCSkips = 256

// blankToError blanks the comments and trailing commas of a file hujson
// refused, up to its first syntax error, so that the decoder reports that
// error and not a comment before it: the decoder stops at each in turn.
func blankToError(data []byte) []byte {
	out := bytes.Clone(data)
	from := 0 // out[:from] is a valid start
	for range maxJSONCSkips {
		dec := json.NewDecoder(bytes.NewReader(out))
		var base int
		var err error
		for err == nil {
			base = int(dec.InputOffset())
			err = dec.Decode(new(json.RawMessage))
		}
		var se *json.SyntaxError
		if !errors.As(err, &se) {
			break
		}
		at, ok := syntaxErrorAt(out, from, base+int(se.Offset)-1, int(se.Offset))
		if !ok || !blankExtension(out, at) {
			break
		}
		from = at
	}
	return out
}

// blankExtension blanks the comment starting at out[at], or the trailing
// comma before the bracket at out[at], and reports whether there was one.
func blankExtension(out []byte, at int) bool {
	if at < 0 || at >= len(out) {
		return false
	}
	rest := out[at:]
	var end int
	switch {
	case bytes.HasPrefix(rest, []byte("//")):
		if end = bytes.IndexByte(rest, '\n'); end < 0 {
			end = len(rest)
		}
	case bytes.HasPrefix(rest, []byte("/*")):
		if end = bytes.Index(rest[2:], []byte("*/")); end < 0 {
			end = len(rest) // unterminated: the file ends inside it
		} else {
			end += 4
		}
	case rest[0] == '}' || rest[0] == ']':
		i := at - 1
		for i >= 0 && strings.IndexByte(" \t\r\n", out[i]) >= 0 {
			i--
		}
		if i < 0 || out[i] != ',' {
			return false
		}
		out[i] = ' '
		return true
	default:
		return false
	}
	for i := range end {
		if rest[i] != '\n' {
			rest[i] = ' '
		}
	}
	return true
}
