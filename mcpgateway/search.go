package mcpgateway

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/elysia-go/elysia/tools"
)

// ListQuery selects part of a server's tools, so that a model or an operator
// can find one tool among thousands. The zero value selects every tool.
type ListQuery struct {
	// Query holds words matched against tool names and descriptions, best
	// matches first; "" selects every tool in the server's order.
	Query string
	// Cursor is a previous page's NextCursor; "" starts at the beginning.
	Cursor string
	// Limit bounds the tools of one page; 0 means as many as fit in
	// OutputCap bytes of JSON. A page is never larger than OutputCap.
	Limit int
}

// ListPage is one page of a server's tools.
type ListPage struct {
	Tools []ToolInfo `json:"tools"`
	// Total counts the tools the query selects, on every page.
	Total int `json:"total"`
	// NextCursor continues with the next page; "" on the last one.
	NextCursor string `json:"next_cursor"`
	// Stale is true when the server could not be asked and the page comes
	// from the last listing; LastError then says why (masked).
	Stale     bool   `json:"stale,omitempty"`
	LastError string `json:"last_error,omitempty"`
}

// selectTools returns the tools of infos that q.Query selects, best matches
// first; the order of the server is kept among equals and when there is no
// query.
func selectTools(infos []ToolInfo, query string) []ToolInfo {
	words := queryWords(query)
	if len(words) == 0 {
		return infos
	}
	phrase := strings.ToLower(strings.TrimSpace(query))
	type scored struct {
		info  ToolInfo
		score int
	}
	var hits []scored
	for _, ti := range infos {
		if s := matchScore(ti, phrase, words); s > 0 {
			hits = append(hits, scored{ti, s})
		}
	}
	slices.SortStableFunc(hits, func(a, b scored) int { return b.score - a.score })
	out := make([]ToolInfo, len(hits))
	for i, h := range hits {
		out[i] = h.info
	}
	return out
}

// queryWords splits a query into lower-case words of letters and digits.
func queryWords(q string) []string {
	return strings.FieldsFunc(strings.ToLower(q), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// matchScore rates how well ti matches: the whole query as the name or
// within it counts most, then each word found in the name, then each word
// found in the description. Zero means no match.
func matchScore(ti ToolInfo, phrase string, words []string) int {
	name := strings.ToLower(ti.Name)
	desc := strings.ToLower(ti.Description)
	score := 0
	switch {
	case name == phrase:
		score += 100
	case strings.Contains(name, phrase):
		score += 20
	}
	for _, w := range words {
		switch {
		case strings.Contains(name, w):
			score += 5
		case strings.Contains(desc, w):
			score++
		}
	}
	return score
}

// page cuts infos into the page q asks for: from q.Cursor, at most q.Limit
// tools and at most capBytes of JSON (always at least one tool, so a page
// moves on even when a single tool is larger).
func page(infos []ToolInfo, q ListQuery, capBytes int) (ListPage, error) {
	start := 0
	if q.Cursor != "" {
		n, err := strconv.Atoi(q.Cursor)
		if err != nil || n < 0 || n > len(infos) {
			return ListPage{}, fmt.Errorf("%w %q: give a next_cursor from a previous page", ErrBadCursor, q.Cursor)
		}
		start = n
	}
	p := ListPage{Tools: []ToolInfo{}, Total: len(infos)}
	size := 0
	end := start
	for end < len(infos) {
		if q.Limit > 0 && end-start >= q.Limit {
			break
		}
		n := toolSize(infos[end])
		if end > start && size+n > capBytes {
			break
		}
		size += n
		end++
	}
	p.Tools = append(p.Tools, infos[start:end]...)
	if end < len(infos) {
		p.NextCursor = strconv.Itoa(end)
	}
	return p, nil
}

// toolSize is the size of ti in a JSON array, comma included.
func toolSize(ti ToolInfo) int {
	if ti.size > 0 {
		return ti.size
	}
	b, _ := tools.Marshal(ti.object()) // a ToolInfo always marshals: its schemas are valid JSON
	return len(b) + 1
}

// maxDescribedTools bounds the tool names a gateway's description lists: the
// description is in every tree and every prompt.
const maxDescribedTools = 30

// describedNames returns the names the description shows, and how many it
// leaves out.
func describedNames(names []string) (shown []string, more int) {
	if len(names) <= maxDescribedTools {
		return names, 0
	}
	return names[:maxDescribedTools], len(names) - maxDescribedTools
}
