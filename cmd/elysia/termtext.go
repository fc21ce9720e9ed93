package main

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// termText makes text from a server, a model or a user safe to print on a
// terminal: it drops escape sequences (CSI such as cursor moves and screen
// clears, OSC such as OSC 52 clipboard writes and OSC 8 hyperlinks, DCS,
// SOS, PM, APC and the short ESC forms), whether introduced by ESC or by
// their C1 form; every other C0 control but newline and tab (carriage
// return and backspace included, which overwrite what was printed); DEL;
// every C1 control (U+0080–U+009F); and the bidirectional overrides and
// isolates (U+202A–U+202E, U+2066–U+2069) that make a line read otherwise
// than it is. Invalid UTF-8 becomes U+FFFD. Ordinary text (accents, emoji,
// other scripts) is kept. termText(termText(s)) == termText(s).
func termText(s string) string {
	if plain(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteRune(utf8.RuneError)
			i++
		case r == 0x1b:
			i = skipEscape(s, i+1)
		case r == 0x9b: // CSI
			i = skipCSI(s, i+size)
		case r == 0x9d, r == 0x90, r == 0x98, r == 0x9e, r == 0x9f: // OSC, DCS, SOS, PM, APC
			i = skipString(s, i+size)
		case r == '\n', r == '\t':
			b.WriteRune(r)
			i += size
		case unsafeRune(r):
			i += size
		default:
			b.WriteString(s[i : i+size])
			i += size
		}
	}
	return b.String()
}

// termLine is termText on one line: newlines and tabs become spaces, for
// a table cell or a line of its own.
func termLine(s string) string {
	s = termText(s)
	if !strings.ContainsAny(s, "\n\t") {
		return s
	}
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return ' '
		}
		return r
	}, s)
}

// termf is fmt.Sprintf whose result is made safe by termText: for lines
// that hold hostile values (errors, server names) among the CLI's own words.
func termf(format string, args ...any) string {
	return termText(fmt.Sprintf(format, args...))
}

// plain reports whether s is printable ASCII, newlines and tabs only:
// nothing for termText to do.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\n' && c != '\t') || c >= 0x7f {
			return false
		}
	}
	return true
}

// unsafeRune reports whether r is a control termText drops: C0 (newline and
// tab are handled before), DEL, C1, or a bidirectional override or isolate.
func unsafeRune(r rune) bool {
	return r < 0x20 || (r >= 0x7f && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

// skipEscape returns the index after the escape sequence whose ESC was
// just before i.
func skipEscape(s string, i int) int {
	if i >= len(s) {
		return i
	}
	switch s[i] {
	case '[':
		return skipCSI(s, i+1)
	case ']', 'P', 'X', '^', '_': // OSC, DCS, SOS, PM, APC
		return skipString(s, i+1)
	}
	// nF and Fp/Fe/Fs forms: intermediates 0x20–0x2F, then one final
	// 0x30–0x7E (ESC c, ESC 7, ESC ( B).
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f {
		i++
	}
	if i < len(s) && s[i] >= 0x30 && s[i] <= 0x7e {
		i++
	}
	return i
}

// skipCSI returns the index after a control sequence whose introducer
// ends before i: parameter bytes 0x30–0x3F, intermediate bytes 0x20–0x2F,
// then one final byte 0x40–0x7E. Anything else ends it early, and is then
// read as text again (a control in it is dropped on its own).
func skipCSI(s string, i int) int {
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x3f {
		i++
	}
	if i < len(s) && s[i] >= 0x40 && s[i] <= 0x7e {
		i++
	}
	return i
}

// skipString returns the index after a control string (OSC, DCS, SOS, PM,
// APC) whose introducer ends before i: up to and including its terminator,
// BEL, ESC \ or ST (U+009C). An unterminated string runs to the end, as a
// terminal would read it.
func skipString(s string, i int) int {
	for i < len(s) {
		switch {
		case s[i] == 0x07:
			return i + 1
		case s[i] == 0x1b:
			if i+1 < len(s) && s[i+1] == '\\' {
				return i + 2
			}
			return i // another sequence cuts the string short
		case strings.HasPrefix(s[i:], "\u009c"):
			return i + len("\u009c")
		}
		i++
	}
	return i
}

// termJSON escapes, in JSON text, what encoding/json and log/slog leave raw
// but a terminal may act on: DEL, C1 controls and bidirectional overrides
// (and any C0 control but newline, which they never leave raw), as \uXXXX.
// Such runes only occur inside JSON strings, so the JSON means the same.
func termJSON(b []byte) []byte {
	var out []byte
	last := 0
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			r = 0xfffd // encoders never leave it raw; a terminal must not see it
		} else if r == '\n' || !unsafeRune(r) {
			i += size
			continue
		}
		out = append(out, b[last:i]...)
		out = fmt.Appendf(out, `\u%04x`, r)
		i += size
		last = i
	}
	if out == nil {
		return b
	}
	return append(out, b[last:]...)
}

// escapedWriter writes a log through termJSON: slog's JSON handler leaves
// DEL, C1 and bidi controls raw, its text handler DEL. Each Write must hold
// whole runes, as one record of a slog handler does.
type escapedWriter struct{ w io.Writer }

func (t escapedWriter) Write(p []byte) (int, error) {
	if _, err := t.w.Write(termJSON(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}
