package llm

import (
	"strings"
	"unicode"
)

// Weights of a query word found in an option's name, its inputs' names and
// its description. A name says most about what an option does.
const (
	weightName        = 3
	weightProperty    = 1
	weightDescription = 1
)

// stopWords carry no meaning for matching a request to a tool.
var stopWords = map[string]bool{
	"a": true, "an": true, "the": true, "to": true, "of": true, "for": true, "with": true,
	"and": true, "or": true, "in": true, "on": true, "at": true, "by": true, "from": true,
	"me": true, "my": true, "i": true, "you": true, "your": true, "it": true, "its": true,
	"is": true, "are": true, "be": true, "this": true, "that": true, "these": true,
	"please": true, "can": true, "could": true, "would": true, "will": true, "do": true,
	"some": true, "any": true, "as": true, "into": true, "then": true, "so": true,
	"what": true, "which": true, "how": true, "all": true, "let": true, "us": true,
	"mcp": true, "tool": true, "server": true, "provide": true, "access": true, "multiple": true,
}

// words splits s into lower-case words: at every character that is not a
// letter or digit (so snake_case and kebab-case split) and between a lower
// case letter or digit and an upper case one (camelCase).
func words(s string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	rs := []rune(s)
	for i, r := range rs {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush()
		case unicode.IsUpper(r) && i > 0 && (unicode.IsLower(rs[i-1]) || unicode.IsDigit(rs[i-1])):
			flush()
			cur = append(cur, r)
		default:
			cur = append(cur, r)
		}
	}
	flush()
	return out
}

// stem strips common English plural endings, so "notes", "boxes" and
// "entries" meet "note", "box" and "entry".
func stem(w string) string {
	switch {
	case len(w) > 4 && strings.HasSuffix(w, "ies"):
		return w[:len(w)-3] + "y"
	case len(w) > 4 && strings.HasSuffix(w, "es") && strings.ContainsAny(w[len(w)-3:len(w)-2], "sxzo"):
		return w[:len(w)-2]
	case len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss"):
		return w[:len(w)-1]
	}
	return w
}

// terms returns the distinct stemmed words of s that are not stop words,
// in order.
func terms(s string) []string {
	var out []string
	seen := map[string]bool{}
	for _, w := range words(s) {
		if stopWords[w] {
			continue
		}
		w = stem(w)
		if stopWords[w] || seen[w] {
			continue
		}
		seen[w] = true
		out = append(out, w)
	}
	return out
}

func termSet(parts ...string) map[string]bool {
	set := map[string]bool{}
	for _, p := range parts {
		for _, t := range terms(p) {
			set[t] = true
		}
	}
	return set
}

// score measures how well query terms match an option: each term counts
// once, by the most telling place it appears in.
func score(query []string, name, description string, props []string) int {
	nameSet := termSet(name)
	propSet := termSet(props...)
	descSet := termSet(description)
	total := 0
	for _, q := range query {
		switch {
		case nameSet[q]:
			total += weightName
		case propSet[q]:
			total += weightProperty
		case descSet[q]:
			total += weightDescription
		}
	}
	return total
}

func propNames(s schema) []string {
	out := make([]string, len(s.props))
	for i, p := range s.props {
		out[i] = p.name
	}
	return out
}
