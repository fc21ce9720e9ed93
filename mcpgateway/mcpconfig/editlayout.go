package mcpconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tailscale/hujson"
)

// items is an object's members or an array's elements, for the edits
// common to both. Item i is led by before(i) (its comments and indentation;
// before(len()) is what precedes the closing bracket) and followed by
// after(i), the text before its comma, nil on the last item when it has
// no trailing comma.
type items interface {
	len() int
	before(i int) *hujson.Extra
	after(i int) *hujson.Extra
	remove(i int)
}

type objectItems struct{ *hujson.Object }

func (o objectItems) len() int { return len(o.Members) }
func (o objectItems) before(i int) *hujson.Extra {
	if i == len(o.Members) {
		return &o.AfterExtra
	}
	return &o.Members[i].Name.BeforeExtra
}
func (o objectItems) after(i int) *hujson.Extra { return &o.Members[i].Value.AfterExtra }
func (o objectItems) remove(i int)              { o.Members = append(o.Members[:i], o.Members[i+1:]...) }

// index returns the first member called key, or -1.
func (o objectItems) index(key string) int {
	for i, m := range o.Members {
		if lit, ok := m.Name.Value.(hujson.Literal); ok && lit.String() == key {
			return i
		}
	}
	return -1
}

type arrayItems struct{ *hujson.Array }

func (a arrayItems) len() int { return len(a.Elements) }
func (a arrayItems) before(i int) *hujson.Extra {
	if i == len(a.Elements) {
		return &a.AfterExtra
	}
	return &a.Elements[i].BeforeExtra
}
func (a arrayItems) after(i int) *hujson.Extra { return &a.Elements[i].AfterExtra }
func (a arrayItems) remove(i int)              { a.Elements = append(a.Elements[:i], a.Elements[i+1:]...) }

// indentOf returns the indentation of it's items, whose block opens on a
// line indented by lineIndent, and whether they go one per line. An empty
// block takes lineIndent plus one unit, one per line when fileMulti.
func indentOf(it items, lineIndent, unit string, fileMulti bool) (string, bool) {
	if it.len() == 0 {
		return lineIndent + unit, fileMulti
	}
	b := *it.before(0)
	k := bytes.LastIndexByte(b, '\n')
	if k < 0 {
		return "", false
	}
	if ws := b[k+1:]; len(bytes.Trim(ws, " \t")) == 0 {
		return string(ws), true
	}
	return lineIndent + unit, true
}

// appendMember adds name: val at the end of o; see appendItem.
func appendMember(o objectItems, ind, lineIndent string, multi bool, name string, val hujson.Value) {
	appendItem(o, ind, lineIndent, multi, func(before hujson.Extra, comma bool) {
		val.BeforeExtra = hujson.Extra(" ")
		if len(o.Members) > 0 {
			val.BeforeExtra = bytes.Clone(o.Members[0].Value.BeforeExtra)
			if bytes.ContainsAny(val.BeforeExtra, "/\n") {
				val.BeforeExtra = hujson.Extra(" ")
			}
		}
		val.AfterExtra = nil
		if comma {
			val.AfterExtra = hujson.Extra{}
		}
		o.Members = append(o.Members, hujson.ObjectMember{
			Name:  hujson.Value{BeforeExtra: before, Value: hujson.String(name)},
			Value: val,
		})
	})
}

// appendElement adds val at the end of a; see appendItem.
func appendElement(a arrayItems, ind, lineIndent string, multi bool, val hujson.Value) {
	appendItem(a, ind, lineIndent, multi, func(before hujson.Extra, comma bool) {
		val.BeforeExtra, val.AfterExtra = before, nil
		if comma {
			val.AfterExtra = hujson.Extra{}
		}
		a.Elements = append(a.Elements, val)
	})
}

// appendItem adds an item after the last one of it, by calling add with
// the extra to lead it and whether it takes a trailing comma (when the
// last item had one). The items are indented by ind in a block whose line
// is indented by lineIndent. On a block laid out one item per line, the
// comment on the last item's line stays on that line, comments after it
// stay before the new item, and the closing bracket keeps its
// indentation; on one line, the item follows ", ".
func appendItem(it items, ind, lineIndent string, multi bool, add func(before hujson.Extra, comma bool)) {
	n := it.len()
	comma := false
	if n > 0 {
		last := it.after(n - 1)
		comma = *last != nil
		if *last == nil {
			*last = hujson.Extra{}
		}
	}
	if !multi {
		before := hujson.Extra(nil)
		if n > 0 {
			before = hujson.Extra(" ")
		}
		add(before, false)
		return
	}
	pre, closing := splitClosing(*it.before(n), lineIndent)
	add(append(pre, ind...), comma)
	*it.before(it.len()) = append(hujson.Extra("\n"), closing...)
}

// splitClosing splits the extra before a closing bracket into what stays
// before an item appended there (ending with a newline) and the
// bracket's own indentation.
func splitClosing(tail hujson.Extra, lineIndent string) (pre, closing []byte) {
	k := bytes.LastIndexByte(tail, '\n')
	if k < 0 {
		if len(bytes.TrimSpace(tail)) == 0 {
			return []byte("\n"), []byte(lineIndent)
		}
		return append(bytes.Clone(tail), '\n'), []byte(lineIndent)
	}
	if ws := tail[k+1:]; len(bytes.Trim(ws, " \t")) == 0 {
		return bytes.Clone(tail[:k+1]), bytes.Clone(ws)
	}
	// A block comment ends on the bracket's line.
	return append(bytes.Clone(tail), '\n'), []byte(lineIndent)
}

// removeItem removes item i of it with the comments that lead it and the
// comment on its line, keeping the comment on the previous item's line.
func removeItem(it items, i int) {
	n := it.len()
	lead := *it.before(i)
	next := *it.before(i + 1)
	keep, _, multiline := splitFirstLine(lead)
	var joined hujson.Extra
	switch {
	case !multiline && i == n-1:
		joined = bytes.Clone(next)
	case !multiline:
		// One line: the next item takes this one's place after the comma.
		joined = append(bytes.Clone(lead), bytes.TrimLeft(next, " \t")...)
	default:
		_, rest, ok := splitFirstLine(next)
		if !ok {
			rest = next
		}
		joined = append(bytes.Clone(keep), rest...)
	}
	lastHadComma := *it.after(i) != nil
	it.remove(i)
	*it.before(i) = joined
	if i == n-1 && i > 0 {
		prev := it.after(i - 1)
		if lastHadComma {
			if *prev == nil {
				*prev = hujson.Extra{}
			}
		} else {
			// The new last item keeps no trailing comma; what was before
			// its comma moves before the closing bracket.
			*it.before(i) = append(bytes.Clone(*prev), *it.before(i)...)
			*prev = nil
		}
	}
}

// splitFirstLine splits extra after its first line break that is not
// inside a block comment (the end of a line comment counts). ok is false
// when it has none.
func splitFirstLine(extra hujson.Extra) (first, rest hujson.Extra, ok bool) {
	for i := 0; i < len(extra); i++ {
		switch {
		case extra[i] == '\n':
			return extra[:i+1], extra[i+1:], true
		case bytes.HasPrefix(extra[i:], []byte("/*")):
			end := bytes.Index(extra[i+2:], []byte("*/"))
			if end < 0 {
				return nil, extra, false
			}
			i += end + 3
		case bytes.HasPrefix(extra[i:], []byte("//")):
			end := bytes.IndexByte(extra[i:], '\n')
			if end < 0 {
				return nil, extra, false
			}
			return extra[:i+end+1], extra[i+end+1:], true
		}
	}
	return nil, extra, false
}

// newValue lays val (standard JSON) out for a member whose line is
// indented by ind: over several lines when multi (short lists and objects
// of plain values stay on one line unless force asks for the top level to
// be spread), else on one line.
func newValue(val []byte, ind, unit string, multi, force bool) hujson.Value {
	var b bytes.Buffer
	if !multi || layout(&b, val, ind, unit, force) != nil {
		b.Reset()
		b.Write(oneLine(val))
	}
	v, err := hujson.Parse(b.Bytes())
	if err != nil { // val is JSON: only a bug gets here
		panic(fmt.Sprintf("mcpconfig: laying out %s: %v", val, err))
	}
	v.BeforeExtra, v.AfterExtra = nil, nil
	return v
}

// maxLine is the width up to which a list or object of plain values stays
// on one line.
const maxLine = 100

// layout writes val over several lines, each level one unit deeper than
// ind.
func layout(b *bytes.Buffer, val []byte, ind, unit string, force bool) error {
	val = bytes.TrimSpace(val)
	if len(val) == 0 {
		return errors.New("empty value")
	}
	if val[0] != '{' && val[0] != '[' {
		b.Write(oneLine(val))
		return nil
	}
	type part struct {
		key string // "" in an array
		val []byte
	}
	var parts []part
	if val[0] == '{' {
		members, err := objectMembers(val)
		if err != nil {
			return err
		}
		for _, m := range members {
			parts = append(parts, part{string(mustJSON(m.key)), m.val})
		}
	} else {
		var elems []json.RawMessage
		if err := json.Unmarshal(val, &elems); err != nil {
			return err
		}
		for _, el := range elems {
			parts = append(parts, part{"", el})
		}
	}
	flat := true
	for _, p := range parts {
		if t := bytes.TrimSpace(p.val); len(t) > 0 && (t[0] == '{' || t[0] == '[') {
			flat = false
		}
	}
	if len(parts) == 0 || (!force && flat && len(ind)+len(oneLine(val)) <= maxLine) {
		b.Write(oneLine(val))
		return nil
	}
	open, closing := val[0], byte('}')
	if open == '[' {
		closing = ']'
	}
	b.WriteByte(open)
	for i, p := range parts {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n" + ind + unit)
		if p.key != "" {
			b.WriteString(p.key + ": ")
		}
		if err := layout(b, p.val, ind+unit, unit, false); err != nil {
			return err
		}
	}
	b.WriteString("\n" + ind)
	b.WriteByte(closing)
	return nil
}

// member is one key of an entry with its value as JSON.
type member struct {
	key string
	val []byte
}

// objectMembers splits a JSON object into its members, in order.
func objectMembers(data []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("want a JSON object")
	}
	var out []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		out = append(out, member{key: tok.(string), val: raw})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("want one JSON object")
	}
	return out, nil
}

// objectJSON joins members into a JSON object.
func objectJSON(members []member) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(mustJSON(m.key))
		b.WriteByte(':')
		b.Write(m.val)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// mustJSON marshals a string, which cannot fail.
func mustJSON(s string) []byte {
	b, _ := json.Marshal(s) // a string always marshals
	return b
}

// oneLine compacts JSON and puts a space after each colon and comma.
func oneLine(val []byte) []byte {
	var c bytes.Buffer
	if err := json.Compact(&c, val); err != nil {
		return val
	}
	var out []byte
	inString, escaped := false, false
	for _, ch := range c.Bytes() {
		out = append(out, ch)
		switch {
		case escaped:
			escaped = false
		case inString && ch == '\\':
			escaped = true
		case ch == '"':
			inString = !inString
		case !inString && (ch == ':' || ch == ','):
			out = append(out, ' ')
		}
	}
	return out
}

// indentUnit guesses one level of the file's indentation from its first
// indented line: a tab, or that many spaces; two spaces when none is.
func indentUnit(data []byte) string {
	for line := range bytes.Lines(data) {
		n := 0
		for n < len(line) && (line[n] == ' ' || line[n] == '\t') {
			n++
		}
		if n == 0 || n == len(bytes.TrimRight(line, "\r\n")) {
			continue
		}
		if line[0] == '\t' {
			return "\t"
		}
		return string(line[:min(n, 8)])
	}
	return "  "
}
