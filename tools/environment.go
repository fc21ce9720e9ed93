package tools

import (
	"encoding/json"
	"strconv"
	"sync"
)

// RefIDKey is the key every environment object carries: a stable id the model
// and cited_summarize use to cite it.
const RefIDKey = "_REF_ID"

// Environment holds the results of a run's tools, grouped as Elysia does:
// tool name → result name → list of entries. It is safe for concurrent use;
// a zero Environment is empty and ready.
type Environment struct {
	// mu guards entries and order.
	mu      sync.Mutex
	entries map[string]map[string][]EnvEntry
	order   []envKey
}

type envKey struct{ tool, name string }

// EnvEntry is one result stored in the environment.
type EnvEntry struct {
	Objects  []map[string]any `json:"objects"`
	Metadata map[string]any   `json:"metadata"`

	// json is the entry's JSON, made once by [Environment.Add]: the
	// result event, the decision prompt and the save all need it. Nil for
	// an entry made any other way.
	json []byte
}

// JSON returns e's JSON, as Marshal writes it. An entry made by
// [Environment.Add] returns the encoding Add made, shared: the caller must
// not modify it.
func (e EnvEntry) JSON() ([]byte, error) {
	if e.json != nil {
		return e.json, nil
	}
	return Marshal(e)
}

// DropJSON drops the JSON Add kept of the entries under tool and name
// (see EnvEntry.JSON).
func (e *Environment) DropJSON(tool, name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	DropJSON(e.entries[tool][name])
}

// DropJSON drops the JSON Add kept of the entries of list.
func DropJSON(list []EnvEntry) {
	for i := range list {
		list[i].json = nil
	}
}

// ResultPayload returns the payload of the result event that shows e as a
// result of type typ. Its envelope reuses e's JSON, so neither may be
// changed afterwards.
func (e EnvEntry) ResultPayload(typ string) ResultPayload {
	return ResultPayload{Type: typ, Objects: e.Objects, Metadata: e.Metadata, entry: e.json}
}

// encodeEntry returns e's JSON as Marshal writes it, written once, with no
// spare capacity (so that an append by one holder cannot write into what
// another holds, and nothing is kept for nothing). It is nil when e does not marshal; JSON then reports why.
// objects are e's objects before tagging and encoded, when not nil, their
// JSON: an object whose keys all sort after _REF_ID (as Marshal orders
// them) is its encoding with the tag put first, not encoded again.
func encodeEntry(e EnvEntry, objects []map[string]any, encoded []json.RawMessage) []byte {
	bp := entryBuffers.Get().(*[]byte)
	b, err := appendEntry((*bp)[:0], e, objects, encoded)
	if err != nil {
		return nil // bp is dropped: it may hold half an entry
	}
	out := make([]byte, len(b))
	copy(out, b)
	if cap(b) <= maxPooledMarshal {
		*bp = b
		entryBuffers.Put(bp)
	}
	return out
}

// entryBuffers hold the entries encodeEntry writes before it copies them
// out at their size: grown by doubling, an entry would keep up to as much
// again as spare capacity.
var entryBuffers = sync.Pool{New: func() any { return new([]byte) }}

func appendEntry(b []byte, e EnvEntry, objects []map[string]any, encoded []json.RawMessage) ([]byte, error) {
	b = append(b, `{"objects":[`...)
	var err error
	for i, o := range e.Objects {
		if i > 0 {
			b = append(b, ',')
		}
		if encoded != nil && tagFirst(objects[i], encoded[i]) {
			b = append(b, `{"`+RefIDKey+`":`...)
			if b, err = appendMarshal(b, o[RefIDKey]); err != nil {
				return nil, err
			}
			if len(objects[i]) > 0 {
				b = append(b, ',')
			}
			b = append(b, encoded[i][1:]...)
			continue
		}
		if b, err = appendMarshal(b, o); err != nil {
			return nil, err
		}
	}
	b = append(b, `],"metadata":`...)
	if b, err = appendMarshal(b, e.Metadata); err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// tagFirst reports whether obj, encoded as enc, gets its _REF_ID first when
// tagged and marshalled: every key sorts after it, and enc is an object.
func tagFirst(obj map[string]any, enc json.RawMessage) bool {
	if len(enc) < 2 || enc[0] != '{' {
		return false
	}
	for k := range obj {
		if k <= RefIDKey {
			return false
		}
	}
	return true
}

// Add stores objects under tool and name, tags each with a _REF_ID of the form
// <tool>_<name>_<n>_<i> (n counts earlier entries under the same key), and
// returns the new entry, whose objects are the tagged copies. The input maps
// are copied, not modified; the entry shares its values with them, and
// none of it may be changed afterwards.
func (e *Environment) Add(tool, name string, objects []map[string]any, metadata map[string]any) EnvEntry {
	return e.AddEncoded(tool, name, objects, nil, metadata)
}

// AddEncoded is Add for objects whose JSON the caller has (encoded, one
// per object, as Marshal writes it; see Result.ObjectsJSON): the entry's
// encoding reuses it. An encoded of the wrong length is ignored.
func (e *Environment) AddEncoded(tool, name string, objects []map[string]any, encoded []json.RawMessage, metadata map[string]any) EnvEntry {
	if len(encoded) != len(objects) {
		encoded = nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.entries == nil {
		e.entries = make(map[string]map[string][]EnvEntry)
	}
	byName := e.entries[tool]
	if byName == nil {
		byName = make(map[string][]EnvEntry)
		e.entries[tool] = byName
	}
	if _, seen := byName[name]; !seen {
		e.order = append(e.order, envKey{tool, name})
	}
	n := len(byName[name])
	tagged := make([]map[string]any, len(objects))
	for i, obj := range objects {
		c := make(map[string]any, len(obj)+1)
		for k, v := range obj {
			c[k] = v
		}
		c[RefIDKey] = refID(tool, name, n, i)
		tagged[i] = c
	}
	if metadata == nil {
		metadata = map[string]any{}
	}
	entry := EnvEntry{Objects: tagged, Metadata: metadata}
	entry.json = encodeEntry(entry, objects, encoded)
	byName[name] = append(byName[name], entry)
	return entry
}

func refID(tool, name string, n, i int) string {
	return tool + "_" + name + "_" + strconv.Itoa(n) + "_" + strconv.Itoa(i)
}

// Empty reports whether the environment holds no result.
func (e *Environment) Empty() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.order) == 0
}

// Has reports whether the environment holds a result under tool and name.
func (e *Environment) Has(tool, name string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.entries[tool][name]) > 0
}

// Snapshot returns a deep-enough copy of the environment in Elysia's JSON
// shape: {tool: {name: [{objects, metadata}]}}. Objects themselves are shared
// and must not be modified.
func (e *Environment) Snapshot() map[string]map[string][]EnvEntry {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[string]map[string][]EnvEntry, len(e.entries))
	for tool, byName := range e.entries {
		m := make(map[string][]EnvEntry, len(byName))
		for name, list := range byName {
			m[name] = append([]EnvEntry(nil), list...)
		}
		out[tool] = m
	}
	return out
}

// Since returns, as Snapshot does, the entries added to each list after
// its first seen(tool, name) entries; lists with nothing newer are left
// out. Lists only grow, so a caller that recorded the lengths of the lists
// it read gets what was added since, without copying what it has already
// read (Snapshot copies every entry: a long conversation's environment is
// long).
func (e *Environment) Since(seen func(tool, name string) int) map[string]map[string][]EnvEntry {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out map[string]map[string][]EnvEntry
	for tool, byName := range e.entries {
		for name, list := range byName {
			n := seen(tool, name)
			if len(list) <= n {
				continue
			}
			if out == nil {
				out = map[string]map[string][]EnvEntry{}
			}
			if out[tool] == nil {
				out[tool] = map[string][]EnvEntry{}
			}
			out[tool][name] = append([]EnvEntry(nil), list[max(n, 0):]...)
		}
	}
	return out
}

// Restore replaces the environment's contents with a snapshot (as returned by
// Snapshot, or decoded from storage).
func (e *Environment) Restore(s map[string]map[string][]EnvEntry) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.entries = make(map[string]map[string][]EnvEntry, len(s))
	e.order = e.order[:0]
	for tool, byName := range s {
		m := make(map[string][]EnvEntry, len(byName))
		for name, list := range byName {
			m[name] = append([]EnvEntry(nil), list...)
			e.order = append(e.order, envKey{tool, name})
		}
		e.entries[tool] = m
	}
}
