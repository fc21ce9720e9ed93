// Package textdist measures how far apart two short strings are, for the
// "did you mean" suggestions the CLI and the config parser give.
package textdist

import "unicode/utf8"

// maxRunes bounds the strings compared: past it a string is no misspelling
// of a name, and the cost stays small whatever a file or a user sends.
const maxRunes = 128

// Distance is the Levenshtein distance of a and b, by runes, counting an
// adjacent transposition as one edit (optimal string alignment). Strings
// longer than 128 runes are compared by their first 128.
func Distance(a, b string) int {
	// Cut the bytes before the runes: a string of any length costs no
	// more than its first maxRunes runes.
	a, b = a[:min(len(a), maxRunes*utf8.UTFMax)], b[:min(len(b), maxRunes*utf8.UTFMax)]
	ra, rb := []rune(a), []rune(b)
	ra, rb = ra[:min(len(ra), maxRunes)], rb[:min(len(rb), maxRunes)]
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
