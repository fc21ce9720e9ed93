package persist

import (
	"encoding/json"
	"fmt"

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
// is shorter.
func encodeResults(results map[string]map[string][]tools.EnvEntry) (whole, digests json.RawMessage, err error) {
	w := make(map[string]map[string][]json.RawMessage, len(results))
	d := make(map[string]map[string][]json.RawMessage, len(results))
	for tool, byName := range results {
		w[tool] = make(map[string][]json.RawMessage, len(byName))
		d[tool] = make(map[string][]json.RawMessage, len(byName))
		for name, list := range byName {
			ws := make([]json.RawMessage, len(list))
			ds := make([]json.RawMessage, len(list))
			for i, e := range list {
				if ws[i], err = tools.Marshal(e); err != nil {
					return nil, nil, fmt.Errorf("encode result %s/%s %d: %w", tool, name, i, err)
				}
				ds[i] = ws[i]
				if dg := tree.DigestEntry(e); len(dg) < len(ws[i]) {
					ds[i] = dg
				}
			}
			w[tool][name], d[tool][name] = ws, ds
		}
	}
	if whole, err = tools.Marshal(w); err != nil {
		return nil, nil, err
	}
	if digests, err = tools.Marshal(d); err != nil {
		return nil, nil, err
	}
	return whole, digests, nil
}

// encodeEvents encodes a query's events, a large result with a digest
// that the store keeps once a later query saves its events; queryID is the
// query's id. payloads are the result events' payloads before encoding, by
// envelope ID (see tree.ConversationChange.ResultPayloads): a result
// missing from it is decoded to make its digest.
func encodeEvents(events []tools.Envelope, payloads map[string]tools.ResultPayload) (evs []store.NewEvent, queryID string, err error) {
	evs = make([]store.NewEvent, len(events))
	for i, ev := range events {
		if evs[i].Envelope, err = tools.Marshal(ev); err != nil {
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
