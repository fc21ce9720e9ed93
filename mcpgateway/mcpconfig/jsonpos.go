package mcpconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
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
	clean := stripJSONC(data)
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
	prev := int(d.dec.InputOffset())
	tok, err := d.dec.Token()
	if err == nil {
		return tok, nil
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, &offsetError{len(d.data), "invalid JSON: unexpected end of file", -1}
	}
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return nil, &offsetError{prev, "invalid JSON: " + err.Error(), -1}
	}
	msg := "invalid JSON: " + se.Error()
	if strings.Contains(msg, "after object key:value pair") || strings.Contains(msg, "after array element") {
		msg += " (missing comma?)"
	}
	return nil, &offsetError{syntaxOffset(d.data, prev, se), msg, -1}
}

// syntaxOffset finds the offending byte of a syntax error. The decoder's
// SyntaxError.Offset is not reliable for positions in a token stream, but
// its message names the character ("invalid character 'x' ..."), which is
// the first such character after the last good token.
func syntaxOffset(data []byte, prev int, se *json.SyntaxError) int {
	msg := se.Error()
	if rest, ok := strings.CutPrefix(msg, "invalid character "); ok {
		if end := strings.Index(rest[1:], "' "); end >= 0 || strings.HasSuffix(rest, "'") {
			lit := rest
			if end >= 0 {
				lit = rest[:end+2]
			}
			if r, err := strconv.Unquote(lit); err == nil {
				if i := bytes.IndexRune(data[min(prev, len(data)):], []rune(r)[0]); i >= 0 {
					return prev + i
				}
			}
		}
	}
	return min(max(int(se.Offset), prev), len(data))
}

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

// stripJSONC blanks out // and /* */ comments and trailing commas with
// spaces, keeping every offset and newline, so that files VS Code accepts
// parse and positions still point into the original text.
func stripJSONC(data []byte) []byte {
	if !bytes.Contains(data, []byte("/")) && !bytes.Contains(data, []byte(",")) {
		return data
	}
	out := bytes.Clone(data)
	lastComma := -1 // offset of a comma not yet followed by a value
	for i := 0; i < len(out); i++ {
		switch c := out[i]; {
		case c == '"':
			lastComma = -1
			for i++; i < len(out) && out[i] != '"'; i++ {
				if out[i] == '\\' {
					i++
				}
			}
		case c == '/' && i+1 < len(out) && out[i+1] == '/':
			for ; i < len(out) && out[i] != '\n'; i++ {
				out[i] = ' '
			}
		case c == '/' && i+1 < len(out) && out[i+1] == '*':
			end := bytes.Index(out[i+2:], []byte("*/"))
			if end < 0 {
				return out // unterminated: let the decoder report it
			}
			for j := i; j < i+2+end+2; j++ {
				if out[j] != '\n' {
					out[j] = ' '
				}
			}
			i += end + 3
		case c == ',':
			lastComma = i
		case c == '}' || c == ']':
			if lastComma >= 0 {
				out[lastComma] = ' '
			}
			lastComma = -1
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
		default:
			lastComma = -1
		}
	}
	return out
}
