package prompt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

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
// each is marshalled, and each earlier one digested, once per query (see
// entryFormsOf). It is owned by one run: make one with FormCache{} for
// each query.
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
func (l *promptList) note(n int) []byte {
	refs := fmt.Sprintf("%s_%s_0_*", l.key.Tool, l.key.Name)
	if n > 1 {
		refs += fmt.Sprintf(" to %s_%s_%d_*", l.key.Tool, l.key.Name, n-1)
	}
	text := fmt.Sprintf("%d older results left out to keep the prompt short: _REF_IDs %s", n, refs)
	out, _ := tools.Marshal(shortForm{Objects: []any{map[string]string{truncatedKey: text}}, Metadata: json.RawMessage("{}")})
	return out
}
