package persist

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/elysia-go/elysia/store"
	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/tree"
)

// maxReplayResult bounds, in bytes, a result event the event log keeps
// whole for the UI once a later query makes it old: twice the gateways'
// 64 KiB output cap, so that a capped result comes back whole with its
// JSON escaping, _REF_IDs and metadata. A larger one (a tool with a larger
// cap) comes back with its leading objects that fit (replayForm).
const maxReplayResult = 128 << 10

// replayOverhead is room, in bytes, for what replayForm writes beside the
// objects and the envelope's other members: the type, and the note.
const replayOverhead = 512

// maxDigestMetadata is the largest metadata a result event's replay form
// keeps (the server and action the UI labels a result with).
const maxDigestMetadata = 256

// truncatedKey is the key of the object saying what a shortened result
// left out, as in the decision prompt's digests.
const truncatedKey = "_TRUNCATED"

// newTurn encodes a turn: its messages, and its results whole and as
// digests.
func newTurn(queryID string, msgs []tree.Message, results map[string]map[string][]tools.EnvEntry) (*store.Turn, error) {
	// Every blob is encoding/json's (the results' entries too: see
	// tools.EnvEntry.JSON): the store need not scan them again.
	t := &store.Turn{QueryID: queryID, Encoded: true}
	var err error
	if t.Messages, err = json.Marshal(nonNil(msgs)); err != nil {
		return nil, fmt.Errorf("encode messages: %w", err)
	}
	if len(results) > 0 {
		if t.Results, t.Digests, err = encodeResults(results); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// encodeResults returns the JSON of results, in the shape of the
// environment, whole and with each entry as its digest (tree.DigestEntry,
// the form the decision prompt gives an earlier query's result) when that
// is shorter. Each entry is encoded once and copied into both, keys in
// order, as json.Marshal would write them; marshalling maps of the encoded
// entries instead would compact every entry again.
func encodeResults(results map[string]map[string][]tools.EnvEntry) (whole, digests json.RawMessage, err error) {
	// Encode first, then write each blob at its size: grown by doubling,
	// a turn's results would cost as much again in garbage.
	type list struct {
		name    string
		enc, dg [][]byte
	}
	type tool struct {
		name  string
		lists []list
	}
	var all []tool
	size, dsize := 2, 2
	for _, tname := range slices.Sorted(maps.Keys(results)) {
		t := tool{name: tname}
		for _, name := range slices.Sorted(maps.Keys(results[tname])) {
			l := list{name: name}
			for k, e := range results[tname][name] {
				enc, err := e.JSON()
				if err != nil {
					return nil, nil, fmt.Errorf("encode result %s/%s %d: %w", tname, name, k, err)
				}
				dg := enc
				if short := tree.DigestEntry(e); len(short) < len(enc) {
					dg = short
				}
				l.enc, l.dg = append(l.enc, enc), append(l.dg, dg)
				size, dsize = size+len(enc)+1, dsize+len(dg)+1
			}
			t.lists = append(t.lists, l)
			size, dsize = size+len(name)+8, dsize+len(name)+8 // the key, quotes, brackets and commas
		}
		all = append(all, t)
		size, dsize = size+len(tname)+8, dsize+len(tname)+8
	}
	w, d := make([]byte, 0, size), make([]byte, 0, dsize)
	w, d = append(w, '{'), append(d, '{')
	for i, t := range all {
		if i > 0 {
			w, d = append(w, ','), append(d, ',')
		}
		if w, d, err = appendKey(w, d, t.name); err != nil {
			return nil, nil, err
		}
		w, d = append(w, '{'), append(d, '{')
		for j, l := range t.lists {
			if j > 0 {
				w, d = append(w, ','), append(d, ',')
			}
			if w, d, err = appendKey(w, d, l.name); err != nil {
				return nil, nil, err
			}
			w, d = append(w, '['), append(d, '[')
			for k := range l.enc {
				if k > 0 {
					w, d = append(w, ','), append(d, ',')
				}
				w, d = append(w, l.enc[k]...), append(d, l.dg[k]...)
			}
			w, d = append(w, ']'), append(d, ']')
		}
		w, d = append(w, '}'), append(d, '}')
	}
	w, d = append(w, '}'), append(d, '}')
	return w, d, nil
}

// appendKey appends an object's key to both w and d.
func appendKey(w, d []byte, key string) ([]byte, []byte, error) {
	k, err := tools.Marshal(key)
	if err != nil {
		return nil, nil, err
	}
	w, d = append(append(w, k...), ':'), append(append(d, k...), ':')
	return w, d, nil
}

// encodeEvents encodes a query's events for the event log the UI replays
// when the conversation is reopened; queryID is the query's id. The log
// keeps what the user saw: every event as it was streamed, except that a
// result event over maxReplayResult bytes gets a digest (replayForm),
// which the store keeps instead once a later query saves its events.
// (Folding results to keep a prompt short is the decision prompt's
// business, on the turns' results; see encodeResults.)
func encodeEvents(events []tools.Envelope) (evs []store.NewEvent, queryID string, err error) {
	evs = make([]store.NewEvent, len(events))
	for i, ev := range events {
		if evs[i].Envelope, err = encodeEnvelope(ev); err != nil {
			return nil, "", err
		}
		evs[i].Encoded = true // see encodeEnvelope
		queryID = ev.QueryID
		if ev.Type != tools.EventResult || len(evs[i].Envelope) <= maxReplayResult {
			continue
		}
		if evs[i].Digest, err = replayForm(ev, len(evs[i].Envelope)); err != nil {
			return nil, "", fmt.Errorf("result event %s: %w", ev.ID, err)
		}
	}
	return evs, queryID, nil
}

// encodeEnvelope returns the JSON of ev as tools.Marshal writes it, with
// ev.Payload copied in as it is rather than compacted again: a payload is
// the compact JSON tools.NewEnvelope made, or that a decoder read (an
// envelope relayed from another replica), so the store need not check it
// again.
func encodeEnvelope(ev tools.Envelope) (json.RawMessage, error) {
	return tools.AppendEnvelope(nil, ev)
}

// replayForm returns result event ev, whose JSON is size bytes, cut to fit
// maxReplayResult: its leading objects that fit, whole and in their keys'
// order, then an object whose _TRUNCATED says how many were left out; its
// metadata is kept when small.
func replayForm(ev tools.Envelope, size int) (json.RawMessage, error) {
	var p struct {
		Type     string            `json:"type"`
		Objects  []json.RawMessage `json:"objects"`
		Metadata json.RawMessage   `json:"metadata"`
	}
	if err := json.Unmarshal(ev.Payload, &p); err != nil {
		return nil, err
	}
	if len(p.Metadata) > maxDigestMetadata {
		p.Metadata = json.RawMessage("{}")
	}
	// What is left for the objects once the envelope's other members, the
	// metadata and the note are written.
	left := maxReplayResult - (size - len(ev.Payload)) - len(p.Metadata) - replayOverhead
	kept := 0
	for ; kept < len(p.Objects) && len(p.Objects[kept])+1 <= left; kept++ {
		left -= len(p.Objects[kept]) + 1
	}
	note, err := tools.Marshal(map[string]string{truncatedKey: fmt.Sprintf(
		"%d of %d objects left out: a saved conversation keeps %d KiB of each result", len(p.Objects)-kept, len(p.Objects), maxReplayResult>>10)})
	if err != nil {
		return nil, err
	}
	p.Objects = append(p.Objects[:kept:kept], note)
	if ev.Payload, err = tools.Marshal(p); err != nil {
		return nil, err
	}
	return tools.Marshal(ev)
}
