package store

import (
	"encoding/json"
	"errors"
	"slices"
	"sync"
)

// pack is the row a query's events are saved in (see
// packedEventsMigration): their envelopes as one JSON array and, when any
// event has a digest, the array a later query trims it to (each event's
// digest where it has one, its envelope where not), which holds the small
// events a second time until then. A row per event cost a query a row and
// an index entry per event, and a statement's worth of work on each; the
// limits of one value (1 GB in both databases) now bound a query's events
// together. Packs are pooled: the driver copies them (see borrowed).
type pack struct {
	envelopes, digests []byte
	digested           bool // digests holds the array
}

// trimmed returns the array a later query trims the events to, nil when
// none of them has a digest.
func (p *pack) trimmed() []byte {
	if !p.digested {
		return nil
	}
	return p.digests
}

var packs = sync.Pool{New: func() any { return new(pack) }}

// maxPooledPack is the largest pack kept for the next save: a rare large
// query should not pin its buffers.
const maxPooledPack = 256 << 10

// events packs events, calling before (when not nil) before each.
func (p *pack) events(queryID string, events []NewEvent, before func(queryID string, i int) error) error {
	size, digested := 1, false
	for _, e := range events {
		size += len(e.Envelope) + 1
		digested = digested || len(e.Digest) > 0
	}
	env, dig := p.envelopes[:0], p.digests[:0]
	env = slices.Grow(env, size)
	if digested {
		dig = slices.Grow(dig, size)
	}
	for i, e := range events {
		if before != nil {
			if err := before(queryID, i); err != nil {
				return err
			}
		}
		sep := byte('[')
		if i > 0 {
			sep = ','
		}
		env = append(append(env, sep), e.Envelope...)
		if !digested {
			continue
		}
		dig = append(dig, sep)
		if len(e.Digest) > 0 {
			dig = append(dig, e.Digest...)
		} else {
			dig = append(dig, e.Envelope...)
		}
	}
	p.envelopes, p.digests, p.digested = append(env, ']'), dig, digested
	if digested {
		p.digests = append(dig, ']')
	}
	return nil
}

// release puts p back in the pool, unless it grew too large.
func (p *pack) release() {
	if cap(p.envelopes) > maxPooledPack || cap(p.digests) > maxPooledPack {
		return
	}
	packs.Put(p)
}

// errNotPacked is the error of a packed events row that is not a JSON array.
var errNotPacked = errors.New("not a JSON array of events")

// splitPacked returns the elements of packed, a JSON array as a pack
// writes it, each as it was written (without the whitespace around it).
// It splits, it does not check: the save checked each event. The elements
// share packed's memory, each capped at its end.
func splitPacked(packed []byte) ([]json.RawMessage, error) {
	s := trimSpace(packed)
	if len(s) < 2 || s[0] != '[' || s[len(s)-1] != ']' {
		return nil, errNotPacked
	}
	s = s[1 : len(s)-1]
	var out []json.RawMessage
	depth, start, inString := 0, 0, false
	cut := func(end int) error {
		e := trimSpace(s[start:end])
		if len(e) == 0 {
			return errNotPacked
		}
		out = append(out, json.RawMessage(e[:len(e):len(e)]))
		start = end + 1
		return nil
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth < 0 {
				return nil, errNotPacked
			}
		case ',':
			if depth == 0 {
				if err := cut(i); err != nil {
					return nil, err
				}
			}
		}
	}
	if inString || depth != 0 {
		return nil, errNotPacked
	}
	if len(out) == 0 && len(trimSpace(s)) == 0 {
		return []json.RawMessage{}, nil
	}
	if err := cut(len(s)); err != nil {
		return nil, err
	}
	return out, nil
}

// trimSpace trims JSON's whitespace from both ends of b.
func trimSpace(b []byte) []byte {
	isSpace := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}
