package llm

import (
	"encoding/json"
	"regexp"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// pairRE finds "key=" and "key:" in a query; the value is read by hand.
var pairRE = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_\-]*)\s*([=:])\s*`)

// numberRE finds bare numbers.
var numberRE = regexp.MustCompile(`(?:^|[^\w.])(-?\d+(?:\.\d+)?)\b`)

// connectors are words that introduce a value in free text ("titled Next
// week") and are dropped from its start.
var connectors = map[string]bool{
	"titled": true, "named": true, "called": true, "saying": true, "says": true,
	"about": true, "containing": true, "matching": true, "value": true,
}

// span is a part of the query, by byte offsets [start, end).
type span struct{ start, end int }

// quote is a quoted string of the query; text excludes the quotes.
type quote struct {
	span
	text string
	used bool
}

// query is a user prompt taken apart for argument extraction.
type query struct {
	text   string
	quotes []quote
	used   []span // spans taken by key=value pairs
}

// findQuotes returns the quoted strings of s: "...", “...” and '...' (the
// last only when the quotes stand at word edges, so "don't" is no quote).
func findQuotes(s string) []quote {
	var out []quote
	// unclosed holds the quote characters no closing quote follows any
	// more; looking again would make the scan quadratic.
	unclosed := map[rune]bool{}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		closing, j := rune(0), -1
		switch {
		case r == '"':
			closing = '"'
		case r == '“':
			closing = '”'
		case r == '\'' && (i == 0 || !isWordByte(s[i-1])):
			closing = '\''
		}
		if closing != 0 && !unclosed[closing] {
			for k := i + size; k < len(s); {
				c, n := utf8.DecodeRuneInString(s[k:])
				if c == closing && (closing != '\'' || k+n == len(s) || !isWordByte(s[k+n])) {
					j = k
					break
				}
				k += n
			}
		}
		if j < 0 {
			if closing != 0 {
				unclosed[closing] = true
			}
			i += size
			continue
		}
		end := j + utf8.RuneLen(closing)
		out = append(out, quote{span: span{i, end}, text: s[i+size : j]})
		i = end
	}
	return out
}

func isWordByte(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= 0x80
}

// normKey folds case and separators, so message-type, message_type and
// messageType name the same property.
func normKey(k string) string {
	return keyFolder.Replace(strings.ToLower(k))
}

var keyFolder = strings.NewReplacer("-", "", "_", "")

// extractArgs reads the arguments of a tool whose input schema is s from a
// user prompt: key=value and key: value pairs naming a property, quoted
// strings for the string properties still empty, a property name followed by
// a number, a lone enum value, a lone number for the one required numeric
// property, and free text for the first required string. Words in skip (the
// option's own names) are left out of free text. Only properties of s are
// set, with values of the type s gives them.
func extractArgs(prompt string, s schema, skip map[string]bool) map[string]any {
	q := &query{text: prompt, quotes: findQuotes(prompt)}
	args := map[string]any{}
	q.readPairs(s, args)
	q.readQuoted(s, args)
	masked := q.masked()
	readNamedNumbers(masked, s, args)
	readEnumWords(masked, s, args, skip)
	readLoneNumber(masked, s, args)
	for _, name := range s.required {
		p, ok := s.prop(name)
		if _, set := args[name]; !ok || set || !isStringy(p) {
			continue
		}
		if text := freeText(masked, p, skip); text != "" {
			args[name] = text
		}
		break
	}
	return args
}

// freePrompt is the prompt without the pairs and quoted strings that
// extractArgs gives to properties of s.
func freePrompt(prompt string, s schema) string {
	q := &query{text: prompt, quotes: findQuotes(prompt)}
	args := map[string]any{}
	q.readPairs(s, args)
	q.readQuoted(s, args)
	return q.masked()
}

func isStringy(p property) bool { return p.typ == "string" && len(p.enum) == 0 }

// inUsed reports whether offset i lies in a pair already read. Pairs are
// read left to right, so used is sorted and its spans do not overlap.
func (q *query) inUsed(i int) bool {
	k := sort.Search(len(q.used), func(k int) bool { return q.used[k].end > i })
	return k < len(q.used) && q.used[k].start <= i
}

// quoteIndex returns the index of the first quote that ends after offset
// i; quotes are sorted and do not overlap.
func (q *query) quoteIndex(i int) int {
	return sort.Search(len(q.quotes), func(k int) bool { return q.quotes[k].end > i })
}

func (q *query) quoteAt(i int) *quote {
	if k := q.quoteIndex(i); k < len(q.quotes) && q.quotes[k].start == i {
		return &q.quotes[k]
	}
	return nil
}

func (q *query) inQuote(i int) bool {
	k := q.quoteIndex(i)
	return k < len(q.quotes) && q.quotes[k].start <= i
}

// readPairs sets properties named by key=value and key: value pairs.
func (q *query) readPairs(s schema, args map[string]any) {
	matches := pairRE.FindAllStringSubmatchIndex(q.text, -1)
	var starts []int // where pairs naming a property begin, to end "key: value"
	for _, m := range matches {
		if _, ok := propByKey(s, q.text[m[2]:m[3]]); ok && !q.inQuote(m[0]) {
			starts = append(starts, m[0])
		}
	}
	for _, m := range matches {
		if q.inQuote(m[0]) || q.inUsed(m[0]) || (m[0] > 0 && isWordByte(q.text[m[0]-1])) {
			continue
		}
		p, ok := propByKey(s, q.text[m[2]:m[3]])
		if !ok {
			continue
		}
		raw, quoted, end := q.value(m[1], q.text[m[4]:m[5]] == ":", starts)
		if end <= m[1] && raw == "" {
			continue
		}
		q.used = append(q.used, span{m[0], end})
		args[p.name] = coerce(p, raw, quoted)
	}
}

func propByKey(s schema, key string) (property, bool) {
	k := normKey(key)
	for _, p := range s.props {
		if normKey(p.name) == k {
			return p, true
		}
	}
	return property{}, false
}

// value reads the value that starts at i: a quoted string, a JSON array or
// object, or plain text up to white space (after "=") or up to a comma,
// semicolon, line end or the next pair (after ":").
func (q *query) value(i int, colon bool, starts []int) (raw string, quoted bool, end int) {
	if qt := q.quoteAt(i); qt != nil {
		qt.used = true
		return qt.text, true, qt.end
	}
	rest := q.text[i:]
	if strings.HasPrefix(rest, "[") || strings.HasPrefix(rest, "{") {
		dec := json.NewDecoder(strings.NewReader(rest))
		var v any
		if dec.Decode(&v) == nil {
			n := int(dec.InputOffset())
			return rest[:n], false, i + n
		}
		if strings.HasPrefix(rest, "[") {
			if k := strings.IndexByte(rest, ']'); k > 0 {
				return rest[:k+1], false, i + k + 1
			}
		}
	}
	stop := len(rest)
	if colon {
		if k := strings.IndexAny(rest, ",;\n"); k >= 0 {
			stop = k
		}
		if k := sort.SearchInts(starts, i+1); k < len(starts) && starts[k]-i < stop {
			stop = starts[k] - i
		}
		if k := q.quoteIndex(i); k < len(q.quotes) && q.quotes[k].start > i && q.quotes[k].start-i < stop {
			stop = q.quotes[k].start - i
		}
	} else if k := strings.IndexFunc(rest, unicode.IsSpace); k >= 0 {
		stop = k
	}
	raw = strings.TrimRight(strings.TrimSpace(rest[:stop]), ".,;!?)")
	if colon {
		raw = trimWords(raw, func(w string) bool { return stopWords[strings.ToLower(w)] }, false)
	}
	return raw, false, i + stop
}

// readQuoted gives the quoted strings no pair took to the empty string
// properties: the required ones in their order, then the optional ones.
func (q *query) readQuoted(s schema, args map[string]any) {
	var targets []string
	for _, name := range s.required {
		if p, ok := s.prop(name); ok && isStringy(p) {
			targets = append(targets, name)
		}
	}
	for _, p := range s.props {
		if isStringy(p) && !s.isRequired(p.name) {
			targets = append(targets, p.name)
		}
	}
	for k := range q.quotes {
		qt := &q.quotes[k]
		if qt.used || q.inUsed(qt.start) {
			continue
		}
		for len(targets) > 0 {
			name := targets[0]
			targets = targets[1:]
			if _, set := args[name]; !set {
				args[name] = qt.text
				qt.used = true
				break
			}
		}
	}
}

// masked returns the prompt with pairs and used quotes blanked out, so
// later readers see only the free text.
func (q *query) masked() string {
	b := []byte(q.text)
	blank := func(sp span) {
		for i := sp.start; i < sp.end && i < len(b); i++ {
			b[i] = ' '
		}
	}
	for _, sp := range q.used {
		blank(sp)
	}
	for _, qt := range q.quotes {
		if qt.used {
			blank(qt.span)
		}
	}
	return string(b)
}

// readNamedNumbers reads "limit 2" and "limit of 2" for numeric
// properties.
func readNamedNumbers(text string, s schema, args map[string]any) {
	for _, p := range s.props {
		if _, set := args[p.name]; set || !isNumeric(p) {
			continue
		}
		ws := words(p.name)
		if len(ws) == 0 {
			continue
		}
		for i := range ws {
			ws[i] = regexp.QuoteMeta(ws[i])
		}
		re, err := regexp.Compile(`(?i)\b` + strings.Join(ws, `[\s_\-]*`) + `\s*(?:of\s+|is\s+|to\s+|at\s+)?(-?\d+(?:\.\d+)?)\b`)
		if err != nil {
			continue
		}
		if m := re.FindStringSubmatch(text); m != nil {
			args[p.name] = coerce(p, m[1], false)
		}
	}
}

func isNumeric(p property) bool { return p.typ == "integer" || p.typ == "number" }

// readEnumWords sets a string property with an enum when exactly one of its
// values appears as a word of the free text.
func readEnumWords(text string, s schema, args map[string]any, skip map[string]bool) {
	present := map[string]bool{}
	for _, w := range words(text) {
		if !skip[stem(w)] {
			present[w] = true
		}
	}
	for _, p := range s.props {
		if _, set := args[p.name]; set || p.typ != "string" || len(p.enum) == 0 {
			continue
		}
		var found []any
		for _, e := range p.enum {
			if str, ok := e.(string); ok && present[strings.ToLower(str)] {
				found = append(found, e)
			}
		}
		if len(found) == 1 {
			args[p.name] = found[0]
		}
	}
}

// readLoneNumber gives a lone number of the free text to the one required
// numeric property still empty.
func readLoneNumber(text string, s schema, args map[string]any) {
	var target *property
	for _, name := range s.required {
		p, ok := s.prop(name)
		if _, set := args[name]; !ok || set || !isNumeric(p) {
			continue
		}
		if target != nil {
			return
		}
		target = &p
	}
	nums := numberRE.FindAllStringSubmatch(text, -1)
	if target != nil && len(nums) == 1 {
		args[target.name] = coerce(*target, nums[0][1], false)
	}
}

// freeText is what is left of the prompt once the option's own names, the
// property's name and leading connector words are dropped.
func freeText(text string, p property, skip map[string]bool) string {
	own := termSet(p.name)
	var kept []string
	for _, f := range strings.Fields(text) {
		w := strings.ToLower(strings.Trim(f, ".,;:!?()"))
		if skip[stem(w)] || own[stem(w)] {
			continue
		}
		kept = append(kept, f)
	}
	out := strings.Join(kept, " ")
	isFiller := func(w string) bool {
		w = strings.ToLower(strings.Trim(w, ".,;:!?()"))
		return w == "" || stopWords[w] || connectors[w]
	}
	out = trimWords(out, isFiller, true)
	return strings.Trim(out, " .,;:!?")
}

// trimWords drops words for which drop is true from the end of s, and also
// from its start when front is set.
func trimWords(s string, drop func(string) bool, front bool) string {
	fs := strings.Fields(s)
	for front && len(fs) > 0 && drop(fs[0]) {
		fs = fs[1:]
	}
	for len(fs) > 0 && drop(fs[len(fs)-1]) {
		fs = fs[:len(fs)-1]
	}
	return strings.Join(fs, " ")
}
