package tools

import (
	"encoding/binary"
	"slices"
	"unicode/utf8"
)

// AppendJSONString appends s to b as a JSON string, byte for byte as
// encoding/json writes it: U+2028 and U+2029 escaped, invalid UTF-8 as
// U+FFFD, and <, > and & escaped when escapeHTML (as json.Marshal does;
// Marshal of this package does not). The model's messages are written
// with it, and every event's strings.
//
// A decision context is JSON, so a quote to escape comes every ten bytes
// or so, too often for a loop that stops at each one: a mispredicted
// branch and a short copy cost more than the bytes between them. So a
// byte is written without a branch on whether it is escaped (see
// jsonEscape), and eight bytes of which none needs escaping (in prose,
// most) are copied at once.
func AppendJSONString(b []byte, s string, escapeHTML bool) []byte {
	const hex = "0123456789abcdef"
	// The output is written by index into o, w bytes of it in use. Room
	// for every byte written as two keeps the fast path from checking;
	// the slow path checks for its six-byte escapes.
	table := &jsonEscapeHTML
	if !escapeHTML {
		table = &jsonEscape
	}
	if cap(b)-len(b) < 2*len(s)+2 && plainJSON(s, table) {
		// No room for the worst case, and none is needed: grow only by
		// what s takes (a caller sizes b for its strings as they are).
		b = slices.Grow(b, len(s)+2)
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	b = slices.Grow(b, 2*len(s)+2)
	o := b[:cap(b)]
	w := len(b)
	o[w] = '"'
	w++
	for i := 0; i < len(s); {
		end := len(s)
		if len(s)-i >= 8 {
			x := load64(s[i:])
			if !needsEscape(x) {
				binary.LittleEndian.PutUint64(o[w:], x)
				w += 8
				i += 8
				continue
			}
			end = i + 8
		}
		for i < end {
			c := s[i]
			if e := table[c]; e.n != 0 {
				o[w] = '\\' // overwritten by e.last when e.n is 1
				o[w+int(e.n)-1] = e.last
				w += int(e.n)
				i++
				continue
			}
			if need := 6 + 2*(len(s)-i) + 1; len(o)-w < need {
				o = slices.Grow(o[:w], need)
				o = o[:cap(o)]
			}
			if c < utf8.RuneSelf {
				w += copy(o[w:], `\u00`)
				o[w] = hex[c>>4]
				o[w+1] = hex[c&0xf]
				w += 2
				i++
				continue
			}
			r, size := utf8.DecodeRuneInString(s[i:])
			switch {
			case r == utf8.RuneError && size == 1:
				w += copy(o[w:], `\ufffd`)
			case r == '\u2028' || r == '\u2029':
				w += copy(o[w:], `\u202`)
				o[w] = hex[r&0xf]
				w++
			default:
				w += copy(o[w:], s[i:i+size])
			}
			i += size
		}
	}
	o[w] = '"'
	return o[:w+1]
}

// plainJSON reports whether table writes every byte of s as it is, so
// that s between quotes is its JSON string.
// Like AppendJSONString, it takes 8 bytes at a time and looks byte by
// byte only into a block that may need escaping (a '<' is plain when
// HTML is not escaped), then goes on 8 at a time.
func plainJSON(s string, table *[256]struct{ n, last byte }) bool {
	for i := 0; i < len(s); {
		end := len(s)
		if len(s)-i >= 8 {
			if !needsEscape(load64(s[i:])) {
				i += 8
				continue
			}
			end = i + 8
		}
		for ; i < end; i++ {
			if table[s[i]].n != 1 {
				return false
			}
		}
	}
	return true
}

// jsonEscapeHTML tells, for each byte, what AppendJSONString's fast path
// writes when escaping HTML: n is 1 for a byte written as it is (last), 2
// for a backslash and last, 0 for a byte left to the slow path (a control
// character written as \u00XX, an HTML character, or a byte of a
// multi-byte sequence). jsonEscape is the same but writes <, > and & as
// they are.
var jsonEscapeHTML, jsonEscape = escapeTable(true), escapeTable(false)

func escapeTable(html bool) (t [256]struct{ n, last byte }) {
	for c := range utf8.RuneSelf {
		if c >= 0x20 && c != '"' && c != '\\' && (!html || c != '<' && c != '>' && c != '&') {
			t[c].n, t[c].last = 1, byte(c)
		}
	}
	for c, last := range map[byte]byte{'"': '"', '\\': '\\', '\n': 'n', '\r': 'r', '\t': 't', '\b': 'b', '\f': 'f'} {
		t[c].n, t[c].last = 2, last
	}
	return t
}

// load64 returns the first eight bytes of s as a little-endian word (one
// load: the compiler combines the byte loads).
func load64(s string) uint64 {
	s = s[:8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// needsEscape reports whether a byte of x, eight bytes of a string, may
// not be written as it is: a control character, a byte of a multi-byte
// sequence, or one of " \ < > & (HTML's are written as they are without
// escapeHTML, by the per-byte path). It tests the eight bytes at once: each
// term of m has a high bit set if, and only if, a byte is of its kind.
func needsEscape(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	m := (x-0x20*ones)&^x | // below 0x20
		x | // 0x80 and above
		zeroBytes(x|0x04*ones^'&'*ones) | // '"' (0x22) or '&' (0x26)
		zeroBytes(x|0x02*ones^'>'*ones) | // '<' (0x3c) or '>' (0x3e)
		zeroBytes(x^'\\'*ones)
	return m&highs != 0
}

// zeroBytes has the high bit set in v's lowest zero byte (maybe in bytes
// above it too, where the borrow passes), and in no byte if none is zero.
func zeroBytes(v uint64) uint64 {
	const ones = 0x0101010101010101
	return (v - ones) &^ v
}
