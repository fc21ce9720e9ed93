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

// minEventDigest is the smallest result payload given a digest: a smaller
// one is not worth decoding, its digest would save little.
const minEventDigest = 512

// maxDigestMetadata is the largest metadata a result event's digest keeps
// (the server and action the UI labels a result with).
const maxDigestMetadata = 256

// newTurn encodes a turn: its messages, and its results whole and as
// digests.
func newTurn(queryID string, msgs []tree.Message, results map[string]map[string][]tools.EnvEntry) (*store.Turn, error) {
	t := &store.Turn{QueryID: queryID}
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

// encodeEvents encodes a query's events, a large result with a digest
// that the store keeps once a later query saves its events; queryID is the
// query's id. payloads are the result events' payloads before encoding, by
// envelope ID (see tree.ConversationChange.ResultPayloads): a result
// missing from it is decoded to make its digest.
func encodeEvents(events []tools.Envelope, payloads map[string]tools.ResultPayload) (evs []store.NewEvent, queryID string, err error) {
	evs = make([]store.NewEvent, len(events))
	for i, ev := range events {
		if evs[i].Envelope, err = encodeEnvelope(ev); err != nil {
			return nil, "", err
		}
		queryID = ev.QueryID
		if ev.Type != tools.EventResult || len(ev.Payload) < minEventDigest {
			continue
		}
		p, ok := payloads[ev.ID]
		if !ok {
			if err := json.Unmarshal(ev.Payload, &p); err != nil {
				return nil, "", fmt.Errorf("decode result event %s: %w", ev.ID, err)
			}
		}
		if evs[i].Digest, err = digestEvent(ev, p); err != nil {
			return nil, "", err
		}
		if len(evs[i].Digest) >= len(evs[i].Envelope) {
			evs[i].Digest = nil
		}
	}
	return evs, queryID, nil
}

// encodeEnvelope returns the JSON of ev as tools.Marshal writes it, with
// ev.Payload copied in as it is rather than compacted again: a payload is
// the compact JSON tools.NewEnvelope made (the store checks that it is
// JSON).
func encodeEnvelope(ev tools.Envelope) (json.RawMessage, error) {
	return tools.AppendEnvelope(nil, ev)
}

// digestEvent returns result event ev, whose payload is p, with its
// objects replaced by their digest (tree.DigestEntry) and its metadata
// kept when small.
func digestEvent(ev tools.Envelope, p tools.ResultPayload) (json.RawMessage, error) {
	var short struct {
		Objects  json.RawMessage `json:"objects"`
		Metadata json.RawMessage `json:"metadata"`
	}
	if err := json.Unmarshal(tree.DigestEntry(tools.EnvEntry{Objects: p.Objects, Metadata: p.Metadata}), &short); err != nil {
		return nil, err
	}
	if md, err := tools.Marshal(p.Metadata); err == nil && len(md) <= maxDigestMetadata && p.Metadata != nil {
		short.Metadata = md
	}
	payload, err := tools.Marshal(struct {
		Type     string          `json:"type"`
		Objects  json.RawMessage `json:"objects"`
		Metadata json.RawMessage `json:"metadata"`
	}{p.Type, short.Objects, short.Metadata})
	if err != nil {
		return nil, err
	}
	ev.Payload = payload
	return tools.Marshal(ev)
}
