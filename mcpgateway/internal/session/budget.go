package session

import "strings"

// Budget hands out OutputCap bytes across a result's content items, so that
// neither the model's text nor the objects stored and shown exceed it.
type Budget struct{ Left int }

// Take returns s cut to what is left of the budget, and whether it was cut.
func (b *Budget) Take(s string) (string, bool) {
	if len(s) <= b.Left {
		b.Left -= len(s)
		return s, false
	}
	cut := b.Left
	// Do not split a UTF-8 sequence.
	for cut > 0 && cut < len(s) && s[cut]&0xC0 == 0x80 {
		cut--
	}
	b.Left = 0
	// Copy, so the cut string does not keep the whole answer alive.
	return strings.Clone(s[:cut]), true
}
