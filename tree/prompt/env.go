package prompt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/elysia-go/elysia/tools"
)

// DefaultMaxEnvironment is the default limit of a decision prompt's
// environment (tree's Options.MaxPromptEnvironment): 64 KiB of JSON, some 16k tokens, leaves
// room for the rest of the prompt in a 32k-token context while holding
// dozens of ordinary results whole.
const DefaultMaxEnvironment = 64 << 10

const (
	// previewBytes is how much of a truncated entry's objects the prompt
	// still shows, so that the model knows what was left out.
	previewBytes = 200
	// maxShortMetadata is the largest metadata a truncated entry keeps.
	maxShortMetadata = 256
	truncatedKey     = "_TRUNCATED"
)

// envLimits bound the environment of a decision prompt.
type envLimits struct {
	// total bounds all of it; negative: no bound.
	total int
	// old bounds the results of earlier queries within total; negative:
	// only total bounds them.
	old int
}

// envStats counts the entries the prompt shows short and leaves out.
type envStats struct{ short, omitted int }

// entryForms are an entry's JSON forms: whole (nil when over the
// environment's limit, size then says how long it is) and short.
type entryForms struct {
	size  int
	whole []byte
	short []byte
}

// FormCache keeps the forms of the entries a run's decisions show, so that
// each is marshalled once per query; old entries are not cached, since
// their forms are cheap (see entryFormsOf). It is owned by one run: make
// one with FormCache{} for each query.
type FormCache map[entryRef]*entryForms

// entryRef names one entry: its list and its position in it.
type entryRef struct {
	key   ResultKey
	index int
}

// promptList is one list of the environment and the forms the prompt
// shows of its newest entries.
type promptList struct {
	key     ResultKey
	prefix  []byte // "name":[ in the list's tool object
	entries []tools.EnvEntry
	// current counts the entries at the end of the list that the query
	// added.
	current int
	// first is the first entry shown; the ones before it are counted in
	// the list's note; shown holds the forms of entries[first:].
	first  int
	shown  [][]byte
	closed bool
	// noteBytes bounds the size of the list's note.
	noteBytes int
}

// writeEnvironment writes env, the environment of a decision context, as
// tools.Marshal would, in at most lim.total bytes, of which the results of
// earlier queries take at most lim.old. recent lists the results the
// current query added, oldest first; cache (nil: none) keeps the forms of
// this query's entries between its decisions.
//
// Entries are taken newest first: the query's own results, then the
// others by how far they are from the end of their list. Each is first
// given a short form (for the query's results, the first _REF_ID, a
// preview and the size of what was left out; for earlier ones, a digest
// that needs no marshalling); the entries that do not fit even so (always
// the oldest of their list) are counted in one note per list. Then the
// entries are shown whole, in the same order, while they fit. Only the
// entries shown are marshalled, so the cost of a decision does not grow
// with the conversation. The environment stays a map of lists of
// {"objects", "metadata"}, so that readers of the prompt (the offline
// planner) still decode it. Only an environment with so many result lists
// that their notes alone take more than the limit is written over it.
func writeEnvironment(b *bytes.Buffer, env map[string]map[string][]tools.EnvEntry, recent []ResultKey, lim envLimits, cache FormCache) (envStats, error) {
	toolNames := slices.Sorted(maps.Keys(env))
	byTool := make([][]*promptList, len(toolNames))
	byKey := map[ResultKey]*promptList{}
	var lists []*promptList
	// frame is the size of the JSON around the entries.
	frame := 2 + max(len(env)-1, 0) // {}, and commas between tools
	for i, tool := range toolNames {
		byName := env[tool]
		frame += quotedLen(tool) + 3 + max(len(byName)-1, 0) // "tool":{} and commas
		for _, name := range slices.Sorted(maps.Keys(byName)) {
			l := &promptList{key: ResultKey{tool, name}, entries: byName[name]}
			var p bytes.Buffer
			writeString(&p, name)
			p.WriteString(":[")
			l.prefix = p.Bytes()
			frame += len(l.prefix) + 1 // and ]
			l.first = len(l.entries)
			l.noteBytes = len(l.note(len(l.entries)))
			byTool[i] = append(byTool[i], l)
			byKey[l.key] = l
			lists = append(lists, l)
		}
	}
	for _, k := range recent {
		if l := byKey[k]; l != nil && l.current < len(l.entries) {
			l.current++
		}
	}
	var st envStats
	if err := fitEnvironment(lists, byKey, recent, frame, lim, cache, &st); err != nil {
		return st, err
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
	return st, nil
}

// write writes the list: its note, if any, then its entries in their forms.
func (l *promptList) write(b *bytes.Buffer) {
	b.Write(l.prefix)
	if l.first > 0 {
		b.Write(l.note(l.first))
	}
	for i, e := range l.shown {
		if i > 0 || l.first > 0 {
			b.WriteByte(',')
		}
		b.Write(e)
	}
	b.WriteByte(']')
}

// candidate is an entry on its way into the prompt.
type candidate struct {
	l     *promptList
	index int
	old   bool
	forms *entryForms
}

// fitEnvironment chooses the form of the newest entries of lists so that
// the environment, whose JSON around the entries takes frame bytes, keeps
// within lim; see writeEnvironment. The sizes it adds up are exact but for
// a comma per list, so the result is never over the limits.
func fitEnvironment(lists []*promptList, byKey map[ResultKey]*promptList, recent []ResultKey, frame int, lim envLimits, cache FormCache, st *envStats) error {
	total, old := lim.total, lim.old
	if total < 0 {
		total = math.MaxInt
	}
	if old < 0 || old > total {
		old = total
	}
	// used starts with every entry in its list's note.
	used, usedOld := frame, 0
	for _, l := range lists {
		if len(l.entries) > 0 {
			used += l.noteBytes + 1 // the note and a comma after it
		}
	}
	var taken []*candidate
	take := func(c *candidate) error {
		l := c.l
		if l.closed {
			return nil
		}
		if c.forms == nil {
			room := total - used
			if c.old {
				room = min(room, old-usedOld)
			}
			f, err := entryFormsOf(l, c.index, c.old, room, cache)
			if err != nil {
				return err
			}
			c.forms = f
		}
		cost := len(c.forms.short) + 1
		if c.index == 0 {
			cost -= l.noteBytes + 1 // the list needs no note any more
		}
		if used+cost > total || c.old && usedOld+len(c.forms.short) > old {
			l.closed = true
			return nil
		}
		used += cost
		if c.old {
			usedOld += len(c.forms.short)
		}
		l.first = c.index
		taken = append(taken, c)
		return nil
	}
	// The query's own results, newest first.
	fromEnd := map[ResultKey]int{}
	for _, k := range slices.Backward(recent) {
		l := byKey[k]
		if l == nil {
			continue
		}
		i := len(l.entries) - 1 - fromEnd[k]
		fromEnd[k]++
		if i >= 0 && i >= len(l.entries)-l.current {
			if err := take(&candidate{l: l, index: i}); err != nil {
				return err
			}
		}
	}
	// Then the earlier ones, by how far they are from the end of their
	// list, lists in key order; a list stops at its first entry that does
	// not fit, so the loop visits only what is shown, plus one per list.
	for d := 1; ; d++ {
		open := false
		for _, l := range lists {
			i := len(l.entries) - d
			if l.closed || i < 0 {
				continue
			}
			open = true
			if i >= len(l.entries)-l.current {
				continue // a result of this query, taken above
			}
			if err := take(&candidate{l: l, index: i, old: true}); err != nil {
				return err
			}
		}
		if !open {
			break
		}
	}
	whole := map[*candidate]bool{}
	for _, c := range taken {
		if c.forms.whole == nil {
			continue
		}
		extra := len(c.forms.whole) - len(c.forms.short)
		if used+extra > total || c.old && usedOld+extra > old {
			continue
		}
		used += extra
		if c.old {
			usedOld += extra
		}
		whole[c] = true
	}
	// taken holds each list's entries newest first.
	for _, c := range slices.Backward(taken) {
		l := c.l
		f := c.forms.short
		if whole[c] {
			f = c.forms.whole
		} else {
			st.short++
		}
		l.shown = append(l.shown, f)
	}
	for _, l := range lists {
		st.omitted += l.first
	}
	return nil
}

// entryFormsOf returns the forms of entry i of l, whole only if it takes at
// most room bytes. An entry of this query is marshalled (once per query,
// with cache) and its short form has a preview; an earlier one is
// marshalled only when a cheap estimate says it may fit in room whole, and
// its short form is a digest.
func entryFormsOf(l *promptList, i int, old bool, room int, cache FormCache) (*entryForms, error) {
	ref := entryRef{l.key, i}
	if f := cache[ref]; f != nil && (f.whole != nil || f.size > room) {
		return f, nil
	}
	e := l.entries[i]
	f := &entryForms{}
	if old {
		f.short = digestEntry(e)
		if minSize(e, room) <= room {
			whole, err := e.JSON()
			if err != nil {
				return nil, err
			}
			f.size = len(whole)
			if len(whole) < len(f.short) {
				f.short = whole
			}
			f.whole = whole
		}
		return f, nil
	}
	whole, err := e.JSON()
	if err != nil {
		return nil, err
	}
	f.size = len(whole)
	short, err := shortEntry(e, whole)
	if err != nil {
		return nil, err
	}
	if len(short) >= len(whole) {
		short = whole
	}
	f.short = short
	if len(whole) <= room {
		f.whole = whole
	}
	if cache != nil {
		cache[ref] = f
	}
	return f, nil
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
		// The objects' JSON starts after {"objects":[; cut reads at most
		// previewBytes+1 bytes of it.
		objs := whole[len(`{"objects":[`):]
		obj["_PREVIEW"] = cut(string(objs[:min(len(objs), previewBytes+1)]), previewBytes)
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

// note returns a list's note that its n oldest entries are left out; it
// is no longer for smaller n.
func (l *promptList) note(n int) []byte {
	refs := fmt.Sprintf("%s_%s_0_*", l.key.Tool, l.key.Name)
	if n > 1 {
		refs += fmt.Sprintf(" to %s_%s_%d_*", l.key.Tool, l.key.Name, n-1)
	}
	text := fmt.Sprintf("%d older results left out to keep the prompt short: _REF_IDs %s", n, refs)
	out, _ := tools.Marshal(shortForm{Objects: []any{map[string]string{truncatedKey: text}}, Metadata: json.RawMessage("{}")})
	return out
}

// digestEntry is the short form of an earlier query's entry: its first
// _REF_ID and a one-line digest (how many objects, their keys), made
// without marshalling the objects.
func digestEntry(e tools.EnvEntry) []byte {
	obj := map[string]any{}
	text := "no objects"
	if n := len(e.Objects); n > 0 {
		first, _ := e.Objects[0][tools.RefIDKey].(string)
		obj[tools.RefIDKey] = first
		keys := make([]string, 0, len(e.Objects[0]))
		for k := range e.Objects[0] {
			if k != tools.RefIDKey {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		text = cut(strings.Join(keys, ", "), previewBytes/2)
		if n == 1 {
			text = "1 object of an earlier query, left out to keep the prompt short; keys: " + text
		} else {
			last, _ := e.Objects[n-1][tools.RefIDKey].(string)
			text = fmt.Sprintf("%d objects (%s to %s) of an earlier query, left out to keep the prompt short; keys: %s", n, first, last, text)
		}
	}
	obj[truncatedKey] = text
	out, _ := tools.Marshal(shortForm{Objects: []any{obj}, Metadata: json.RawMessage("{}")})
	return out
}

// minSize returns a lower bound of the size of v's JSON, or a number over
// limit as soon as it knows that the size is over limit. It reads at most
// about limit bytes of v.
func minSize(v any, limit int) int {
	n := 0
	var walk func(v any)
	walk = func(v any) {
		if n > limit {
			return
		}
		switch x := v.(type) {
		case string:
			n += len(x) + 2
		case map[string]any:
			n += 2
			for k, e := range x {
				n += len(k) + 3
				walk(e)
				if n > limit {
					return
				}
			}
		case []any:
			n += 2
			for _, e := range x {
				walk(e)
				n++
				if n > limit {
					return
				}
			}
		case []map[string]any:
			n += 2
			for _, e := range x {
				walk(e)
				n++
				if n > limit {
					return
				}
			}
		case tools.EnvEntry:
			n += len(`{"objects":,"metadata":}`)
			walk(x.Objects)
			walk(x.Metadata)
		case []string:
			for _, e := range x {
				n += len(e) + 3
				if n > limit {
					return
				}
			}
		default:
			n++
		}
	}
	walk(v)
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
