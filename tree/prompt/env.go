package prompt

import (
	"bytes"
	"maps"
	"slices"
	"strconv"

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
	// first is the address of the entry's first object (nil: it has
	// none) and n how many it has: the entry's identity, which an
	// earlier query's forms must match to be reused.
	first *map[string]any
	n     int
	// used says that a decision of the query looked the forms up.
	used bool
}

// FormCache keeps the forms of the entries that a conversation's decisions
// show (see entryFormsOf): those of the query's own results until the
// query ends, and the digests of earlier queries' results from one query
// to the next, so that each earlier result is digested once per
// conversation copy, not once per query.
//
// It describes one environment whose lists are only appended to: an
// entry is named by its list and index. An earlier query's form is reused
// only for the very entry it was made of (its objects, not an equal copy,
// are checked), so a cache that sees another environment (restored or
// replaced) never shows a stale form; its owner drops it all the same
// when it replaces the environment, so as not to hold forms for nothing.
// Between queries it holds the forms of the earlier results that the
// last query's decisions looked at (the ones shown, and one more per
// list), no more.
//
// The zero FormCache is empty and ready, and a nil *FormCache keeps
// nothing. It is not safe for concurrent use: its owner (package tree's
// conversation) uses it only from the query that holds the conversation.
type FormCache struct {
	// current holds the forms of the query's own results, old those of
	// earlier queries' results: a result's short form has a preview in
	// its query and is a digest afterwards.
	current, old map[entryRef]*entryForms
}

// EndQuery ends a query. Its results' forms are dropped: in the next
// query they are earlier results, shown as digests. So are the forms of
// earlier results that its decisions did not look at (a longer
// conversation shows fewer of its oldest results), and the whole JSON of
// the others when longer than their digest and than maxKeptWhole, so that
// an idle conversation holds about one prompt's digests, not its results'
// JSON again (package tree drops that JSON too). A later query marshals
// such an earlier result again when it fits whole; a small one, which the
// next query shows whole as likely as not, is kept whole.
func (c *FormCache) EndQuery() {
	if c == nil {
		return
	}
	c.current = nil
	for ref, f := range c.old {
		if !f.used {
			delete(c.old, ref)
			continue
		}
		f.used = false
		if len(f.whole) > len(f.short) && len(f.whole) > maxKeptWhole {
			f.whole = nil // f.size, its length, stays
		}
	}
}

// maxKeptWhole is the longest whole JSON of an earlier result that
// EndQuery keeps: twice the room the default budget gives earlier results
// (Budget/oldEnvDiv), so that what the next query may show whole is not
// marshalled again.
const maxKeptWhole = 2 * DefaultMaxBytes / oldEnvDiv

// lookup returns the forms kept of entry e at ref (nil: none), an earlier
// query's result if old.
func (c *FormCache) lookup(ref entryRef, e tools.EnvEntry, old bool) *entryForms {
	if c == nil {
		return nil
	}
	if !old {
		return c.current[ref]
	}
	f := c.old[ref]
	if f == nil || f.first == nil || f.first != firstObject(e) || f.n != len(e.Objects) {
		return nil
	}
	f.used = true
	return f
}

// keep keeps f, the forms of the entry at ref, an earlier query's result
// if old. An earlier result without objects is not kept: nothing tells
// it from another at the same place.
func (c *FormCache) keep(ref entryRef, f *entryForms, old bool) {
	switch {
	case c == nil:
	case !old:
		if c.current == nil {
			c.current = map[entryRef]*entryForms{}
		}
		c.current[ref] = f
	case f.first != nil:
		if c.old == nil {
			c.old = map[entryRef]*entryForms{}
		}
		f.used = true
		c.old[ref] = f
	}
}

// firstObject returns the address of e's first object, nil when it has
// none. Copies of an entry (in a snapshot of the environment, or restored
// from one) share their objects, and no two entries share them otherwise
// (Environment.Add copies them); an entry decoded again from the Store
// has objects of its own.
func firstObject(e tools.EnvEntry) *map[string]any {
	if len(e.Objects) == 0 {
		return nil
	}
	return &e.Objects[0]
}

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
// the entries shown between decisions and queries (see FormCache).
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
func writeEnvironment(b *bytes.Buffer, env map[string]map[string][]tools.EnvEntry, recent []ResultKey, lim envLimits, cache *FormCache) (envStats, error) {
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
			tools.WriteJSONString(&p, name)
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
		tools.WriteJSONString(b, tool)
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

// note returns a list's note that its n oldest entries are left out; it
// is no longer for smaller n.
//
// It is the JSON Marshal writes of a shortForm with one object, written
// directly: every decision of a long conversation sizes and writes the
// notes of all its lists.
func (l *promptList) note(n int) []byte {
	list := l.key.Tool + "_" + l.key.Name + "_"
	text := strconv.Itoa(n) + " older results left out to keep the prompt short: _REF_IDs " + list + "0_*"
	if n > 1 {
		text += " to " + list + strconv.Itoa(n-1) + "_*"
	}
	const head, tail = `{"objects":[{"` + truncatedKey + `":`, `}],"metadata":{}}`
	out := make([]byte, 0, len(head)+len(text)+2+len(tail)) // AppendJSONString grows it if text needs escaping
	out = append(out, head...)
	out = tools.AppendJSONString(out, text, false)
	return append(out, tail...)
}
