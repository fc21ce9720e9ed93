package tree

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/elysia-go/elysia/tools"
)

// defaultMaxPromptEnvironment is the default of
// [Options.MaxPromptEnvironment]: 64 KiB of JSON, some 16k tokens, leaves
// room for the rest of the prompt in a 32k-token context while holding
// dozens of ordinary results whole.
const defaultMaxPromptEnvironment = 64 << 10

const (
	// previewBytes is how much of a truncated entry's objects the prompt
	// still shows, so that the model knows what was left out.
	previewBytes = 200
	// maxShortMetadata is the largest metadata a truncated entry keeps.
	maxShortMetadata = 256
	truncatedKey     = "_TRUNCATED"
)

// resultKey names one list of the environment: a tool and its result name.
type resultKey struct{ tool, name string }

// entryForm is how the prompt shows an environment entry.
type entryForm int

const (
	// formOmitted entries are counted in one note per list instead.
	formOmitted entryForm = iota
	// formShort entries keep the first _REF_ID, a preview and the size of
	// what was left out.
	formShort
	formWhole
)

// promptEntry is one environment entry on its way into the prompt.
type promptEntry struct {
	key   resultKey
	index int // position in its list, as in its _REF_IDs
	entry tools.EnvEntry
	whole []byte // the entry's JSON
	short []byte // its truncated form; whole when that is not shorter
	form  entryForm
}

// promptList is one list of the environment, with its entries in order.
type promptList struct {
	key     resultKey
	prefix  []byte // "name":[ in the list's tool object
	entries []*promptEntry
	// omitted counts the entries, the oldest of the list, shown only by
	// the list's note; noteBytes bounds the size of that note.
	omitted   int
	noteBytes int
}

// writeEnvironment writes env, the environment of a decision context, as
// tools.Marshal would, in at most limit bytes (no bound when limit is
// negative). recent lists the results the current query added, oldest
// first.
//
// When the whole environment is over limit, entries are ranked newest
// first: the query's own results, then the others by how far they are from
// the end of their list. In that order, every entry is first given a short
// form that keeps its first _REF_ID, a preview and what was left out; the
// entries that do not fit even so (always the oldest of their list) are
// counted in one note per list. Then the entries are shown whole, in the
// same order, while they fit. The environment stays a map of lists of
// {"objects", "metadata"}, so that readers of the prompt (the offline
// planner) still decode it. Only an environment with so many result lists
// that their notes alone take more than limit is written over limit.
func writeEnvironment(b *bytes.Buffer, env map[string]map[string][]tools.EnvEntry, recent []resultKey, limit int) error {
	toolNames := slices.Sorted(maps.Keys(env))
	byTool := make([][]*promptList, len(toolNames))
	var lists []*promptList
	// frame is the size of the JSON around the entries; size adds the
	// entries and the commas between them.
	frame := 2 + max(len(env)-1, 0) // {}, and commas between tools
	size := 0
	for i, tool := range toolNames {
		byName := env[tool]
		frame += quotedLen(tool) + 3 + max(len(byName)-1, 0) // "tool":{} and commas
		for _, name := range slices.Sorted(maps.Keys(byName)) {
			l := &promptList{key: resultKey{tool, name}}
			var p bytes.Buffer
			writeString(&p, name)
			p.WriteString(":[")
			l.prefix = p.Bytes()
			frame += len(l.prefix) + 1 // and ]
			size += max(len(byName[name])-1, 0)
			for j, e := range byName[name] {
				whole, err := tools.Marshal(e)
				if err != nil {
					return err
				}
				size += len(whole)
				l.entries = append(l.entries, &promptEntry{key: l.key, index: j, entry: e, whole: whole, form: formWhole})
			}
			byTool[i] = append(byTool[i], l)
			lists = append(lists, l)
		}
	}
	if limit >= 0 && frame+size > limit {
		if err := fitEnvironment(lists, recent, frame, limit); err != nil {
			return err
		}
	}
	b.WriteByte('{')
	for i, tool := range toolNames {
		if i > 0 {
			b.WriteByte(',')
		}
		writeString(b, tool)
		b.WriteString(":{")
		for j, l := range byTool[i] {
			if j > 0 {
				b.WriteByte(',')
			}
			l.write(b)
		}
		b.WriteByte('}')
	}
	b.WriteByte('}')
	return nil
}

// write writes the list: its note, if any, then its entries in their forms.
func (l *promptList) write(b *bytes.Buffer) {
	b.Write(l.prefix)
	if l.omitted > 0 {
		b.Write(l.note(l.omitted, l.omittedBytes()))
	}
	for i, e := range l.entries[l.omitted:] {
		if i > 0 || l.omitted > 0 {
			b.WriteByte(',')
		}
		if e.form == formWhole {
			b.Write(e.whole)
		} else {
			b.Write(e.short)
		}
	}
	b.WriteByte(']')
}

// fitEnvironment chooses the form of every entry of lists so that the
// environment, whose JSON around the entries takes frame bytes, takes at
// most limit bytes; see writeEnvironment. The sizes it adds up are exact
// but for a comma per list, so the result is never over limit.
func fitEnvironment(lists []*promptList, recent []resultKey, frame, limit int) error {
	byKey := make(map[resultKey]*promptList, len(lists))
	// used starts with every entry in its list's note.
	used := frame
	for _, l := range lists {
		byKey[l.key] = l
		total := 0
		for _, e := range l.entries {
			total += len(e.whole)
			e.form = formOmitted
		}
		l.noteBytes = len(l.note(len(l.entries), total))
		l.omitted = len(l.entries)
		used += l.noteBytes + 1 // the note and a comma after it
	}
	ranked, err := rank(lists, byKey, recent)
	if err != nil {
		return err
	}
	// closed marks the lists one of whose entries did not fit: their
	// older entries stay in the note.
	closed := map[resultKey]bool{}
	for _, e := range ranked {
		l := byKey[e.key]
		if closed[e.key] {
			continue
		}
		cost := len(e.short) + 1
		if e.index == 0 {
			cost -= l.noteBytes + 1 // the list needs no note any more
		}
		if used+cost > limit {
			closed[e.key] = true
			continue
		}
		used += cost
		e.form = formShort
		l.omitted = e.index
	}
	for _, e := range ranked {
		if extra := len(e.whole) - len(e.short); e.form == formShort && used+extra <= limit {
			used += extra
			e.form = formWhole
		}
	}
	return nil
}

// rank returns the entries of lists newest first (see writeEnvironment),
// each with its short form made.
func rank(lists []*promptList, byKey map[resultKey]*promptList, recent []resultKey) ([]*promptEntry, error) {
	var ranked []*promptEntry
	seen := map[*promptEntry]bool{}
	fromEnd := map[resultKey]int{}
	for _, k := range slices.Backward(recent) {
		l := byKey[k]
		if l == nil {
			continue
		}
		i := len(l.entries) - 1 - fromEnd[k]
		fromEnd[k]++
		if i >= 0 {
			ranked = append(ranked, l.entries[i])
			seen[l.entries[i]] = true
		}
	}
	var rest []*promptEntry
	for _, l := range lists {
		for _, e := range l.entries {
			if !seen[e] {
				rest = append(rest, e)
			}
		}
	}
	// lists is sorted by key, so the stable sort keeps key order among
	// entries equally far from the end of their lists.
	slices.SortStableFunc(rest, func(a, b *promptEntry) int {
		return (len(byKey[a.key].entries) - a.index) - (len(byKey[b.key].entries) - b.index)
	})
	ranked = append(ranked, rest...)
	for _, e := range ranked {
		short, err := shortEntry(e.entry, e.whole)
		if err != nil {
			return nil, err
		}
		if len(short) >= len(e.whole) {
			short = e.whole
		}
		e.short = short
	}
	return ranked, nil
}

// shortEntry returns the truncated form of e, given its JSON: one object
// with the first _REF_ID, what was left out and a preview, and the
// metadata when it is small.
func shortEntry(e tools.EnvEntry, whole []byte) ([]byte, error) {
	obj := map[string]any{}
	note := fmt.Sprintf("%d bytes left out of this prompt to keep it short", len(whole))
	if n := len(e.Objects); n > 0 {
		first, _ := e.Objects[0][tools.RefIDKey].(string)
		last, _ := e.Objects[n-1][tools.RefIDKey].(string)
		obj[tools.RefIDKey] = first
		if n == 1 {
			note = fmt.Sprintf("1 object, %s; the user sees it in full", note)
		} else {
			note = fmt.Sprintf("%d objects (%s to %s), %s; the user sees them in full", n, first, last, note)
		}
		// The objects' JSON starts after {"objects":[.
		obj["_PREVIEW"] = cut(string(whole[len(`{"objects":[`):]), previewBytes)
	}
	obj[truncatedKey] = note
	md, err := tools.Marshal(e.Metadata)
	if err != nil {
		return nil, err
	}
	if len(md) > maxShortMetadata {
		md = fmt.Appendf(nil, `{%q:"%d bytes left out"}`, truncatedKey, len(md))
	}
	return tools.Marshal(shortForm{Objects: []any{obj}, Metadata: md})
}

// shortForm is a truncated entry or a note, keyed like a tools.EnvEntry.
type shortForm struct {
	Objects  []any           `json:"objects"`
	Metadata json.RawMessage `json:"metadata"`
}

// note returns a list's note that n entries, of size bytes in all, are
// left out; it is no longer for smaller n and size.
func (l *promptList) note(n, size int) []byte {
	refs := fmt.Sprintf("%s_%s_0_*", l.key.tool, l.key.name)
	if n > 1 {
		refs += fmt.Sprintf(" to %s_%s_%d_*", l.key.tool, l.key.name, n-1)
	}
	text := fmt.Sprintf("the %d oldest results of this list, %d bytes, are left out of this prompt to keep it short: _REF_IDs %s",
		n, size, refs)
	out, _ := tools.Marshal(shortForm{Objects: []any{map[string]string{truncatedKey: text}}, Metadata: json.RawMessage("{}")})
	return out
}

// omittedBytes is the size of the entries the list's note stands for.
func (l *promptList) omittedBytes() int {
	n := 0
	for _, e := range l.entries[:l.omitted] {
		n += len(e.whole)
	}
	return n
}

// cut returns s cut to at most n bytes, on a rune boundary, marked with …
// when cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// quotedLen is the length of s written as a JSON string.
func quotedLen(s string) int {
	if isPlain(s) {
		return len(s) + 2
	}
	enc, _ := tools.Marshal(s)
	return len(enc)
}
