package mcpregistry

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// MaxFindWords bounds the words of one Find, each one registry search.
const MaxFindWords = 5

// ErrBadSearch is matched by the error of Find for words it will not send:
// too many, or holding control characters.
var ErrBadSearch = errors.New("bad search")

// Find returns the latest version of the servers whose name, title or
// description holds every one of words (case folded), at most limit of them
// (0 means DefaultLimit), each server once, in the registry's order. The
// registry matches one substring of a server's name, so Find asks it once
// per word (for the first limit servers, or 100 when there are several
// words) and keeps the servers that hold every word. No words lists every
// server.
func (c *Client) Find(ctx context.Context, words []string, limit int) ([]Record, error) {
	if limit <= 0 {
		limit = DefaultLimit
	}
	if len(words) > MaxFindWords {
		return nil, fmt.Errorf("%w: at most %d words", ErrBadSearch, MaxFindWords)
	}
	for _, w := range words {
		if hasControl(w) {
			return nil, fmt.Errorf("%w: search words must not hold control characters", ErrBadSearch)
		}
	}
	if len(words) == 0 {
		return c.Search(ctx, "", limit)
	}
	var out []Record
	seen := map[string]bool{}
	for _, w := range words {
		n := limit
		if len(words) > 1 {
			n = maxPageSize
		}
		recs, err := c.Search(ctx, w, n)
		if err != nil {
			return nil, err
		}
		for _, r := range recs {
			if !seen[r.Server.Name] && r.Server.holdsAll(words) {
				seen[r.Server.Name] = true
				out = append(out, r)
			}
		}
	}
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// holdsAll reports whether s's name, title or description holds every
// one of words, case folded.
func (s *Server) holdsAll(words []string) bool {
	text := strings.ToLower(s.Name + " " + s.Title + " " + s.Description)
	for _, w := range words {
		if !strings.Contains(text, strings.ToLower(w)) {
			return false
		}
	}
	return true
}

// Runs says how s can be run, each way once, in the server.json's order:
// "remote" when it has remotes, then each package's registry type ("npm",
// "pypi", "oci", ...). Package types are the registry's text: escape them
// before showing them on a terminal.
func (s *Server) Runs() []string {
	var out []string
	if len(s.Remotes) > 0 {
		out = append(out, "remote")
	}
	for _, p := range s.Packages {
		if !slices.Contains(out, p.RegistryType) {
			out = append(out, p.RegistryType)
		}
	}
	return out
}
