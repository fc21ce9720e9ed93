package prompt

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"github.com/elysia-go/elysia/tools"
)

// writeString writes s as a JSON string.
func writeString(b *bytes.Buffer, s string) {
	if isPlain(s) {
		b.WriteByte('"')
		b.WriteString(s)
		b.WriteByte('"')
		return
	}
	enc, _ := tools.Marshal(s) // a string always marshals
	b.Write(enc)
}

// isPlain reports whether s needs no escaping in JSON. <, > and & are
// plain: the wire is not HTML-escaped (tools.Marshal).
func isPlain(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// oneLine collapses whitespace so a quoted message stays on its line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
