package tools

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// CleanDescription returns s, a description a server gave a tool, without
// what a reader cannot see but a model reads: invisible characters (the
// zero-width ones, bidirectional controls, the Unicode tag block and every
// other format character, category Cf) and HTML comments (an unterminated
// one to the end). Hidden text of either kind is how a "tool poisoning"
// description gives a model instructions its user never sees. removed
// counts the characters taken out (a comment's whole text included), 0
// when s was clean, in which case s itself is returned. Invalid UTF-8 is
// replaced, as JSON would. Cleaning goes on until nothing is left to take
// out: what one pass leaves may join into a comment ("<!<!---->--").
func CleanDescription(s string) (clean string, removed int) {
	for needsCleaning(s) {
		var n int
		s, n = cleanOnce(s)
		if n == 0 {
			break // only invalid UTF-8, now replaced
		}
		removed += n
	}
	return s, removed
}

// cleanOnce is one pass of CleanDescription.
func cleanOnce(s string) (clean string, removed int) {
	var b strings.Builder
	b.Grow(len(s))
	for len(s) > 0 {
		if strings.HasPrefix(s, "<!--") {
			end := strings.Index(s[4:], "-->")
			var comment string
			if end < 0 {
				comment, s = s, ""
			} else {
				comment, s = s[:4+end+3], s[4+end+3:]
			}
			removed += utf8.RuneCountInString(comment)
			continue
		}
		r, size := utf8.DecodeRuneInString(s)
		s = s[size:]
		if invisible(r) {
			removed++
			continue
		}
		b.WriteRune(r) // utf8.RuneError for an invalid byte
	}
	return b.String(), removed
}

// needsCleaning is the cheap test: most descriptions are printable text
// without comments.
func needsCleaning(s string) bool {
	if strings.Contains(s, "<!--") {
		return true
	}
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return strings.ContainsFunc(s, func(r rune) bool { return invisible(r) || r == utf8.RuneError })
		}
	}
	return false
}

// invisible reports whether r is a character CleanDescription removes.
func invisible(r rune) bool {
	return unicode.Is(unicode.Cf, r) || (r >= 0xE0000 && r <= 0xE007F)
}
