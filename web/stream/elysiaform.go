package stream

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/elysia-go/elysia/tools"
)

// catalogueActions are the gateway actions whose result lists what a server
// offers: its tools, resources or prompts.
var catalogueActions = map[string]bool{"list": true, "list_resources": true, "list_prompts": true}

// maxRowDescription is how many characters of a description a catalogue row
// keeps: about one line of a chat column.
const maxRowDescription = 120

// catalogueRow is one row of a catalogue as Elysia's frontend is sent it.
// The frontend takes a table's columns from its first object's keys, in
// order: the name first.
type catalogueRow struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// ElysiaFrontendForm returns env as Weaviate Elysia's own frontend is sent
// it. A result that lists a server's catalogue (a gateway's list,
// list_resources or list_prompts) becomes a table of names and one-line
// descriptions: that frontend shows a "table" object by object, one column
// per key, so the listing as the model and the service's own UI get it
// (input schemas, _REF_ID) would fill the chat before each answer. Elysia
// does the same with a Result's mapping: its frontend gets the mapped
// objects, the model the full ones. Every other envelope, and a result that
// does not decode as one, is returned as it is.
func ElysiaFrontendForm(env tools.Envelope) tools.Envelope {
	if env.Type != tools.EventResult {
		return env
	}
	if p, ok := compactCatalogue(env.Payload); ok {
		env.Payload = p
	}
	return env
}

// ElysiaFrontendFormJSON is ElysiaFrontendForm for an envelope's JSON, as an
// event log keeps it; JSON that is not an envelope is returned as it is.
func ElysiaFrontendFormJSON(raw json.RawMessage) json.RawMessage {
	var env tools.Envelope
	if json.Unmarshal(raw, &env) != nil || env.Type != tools.EventResult {
		return raw
	}
	p, ok := compactCatalogue(env.Payload)
	if !ok {
		return raw
	}
	env.Payload = p
	b, err := tools.Marshal(env)
	if err != nil {
		return raw
	}
	return b
}

// compactCatalogue returns the payload of a catalogue result as Elysia's
// frontend is sent it, and false when payload is no catalogue result.
func compactCatalogue(payload json.RawMessage) (json.RawMessage, bool) {
	var p struct {
		Type     string                       `json:"type"`
		Objects  []map[string]json.RawMessage `json:"objects"`
		Metadata json.RawMessage              `json:"metadata"`
	}
	if json.Unmarshal(payload, &p) != nil || p.Type != "table" {
		return nil, false
	}
	var md struct {
		Server  string `json:"server"`
		Action  string `json:"action"`
		Omitted int    `json:"omitted"`
	}
	if json.Unmarshal(p.Metadata, &md) != nil || md.Server == "" || !catalogueActions[md.Action] {
		return nil, false
	}
	rows := make([]catalogueRow, 0, len(p.Objects)+1)
	for _, o := range p.Objects {
		rows = append(rows, rowOf(o))
	}
	if md.Omitted > 0 {
		rows = append(rows, catalogueRow{Name: "…", Description: strconv.Itoa(md.Omitted) + " more not listed"})
	}
	b, err := tools.Marshal(struct {
		Type     string          `json:"type"`
		Objects  []catalogueRow  `json:"objects"`
		Metadata json.RawMessage `json:"metadata"`
	}{p.Type, rows, p.Metadata})
	if err != nil {
		return nil, false
	}
	return b, true
}

// rowOf returns the row of one listed object: its name and the first line
// of its description, or of its URI for a resource without one. An object
// without a name (a saved log's note that objects were left out) shows its
// text as the description.
func rowOf(o map[string]json.RawMessage) catalogueRow {
	str := func(key string) string {
		var s string
		_ = json.Unmarshal(o[key], &s) // absent or not a string: ""
		return s
	}
	r := catalogueRow{Name: str("name"), Description: str("description")}
	if r.Description == "" {
		r.Description = str("uri")
	}
	if r.Description == "" {
		r.Description = str("uri_template")
	}
	if r.Name == "" && r.Description == "" && len(o) == 1 {
		for k := range o {
			r.Name, r.Description = "…", str(k)
		}
	}
	r.Description = oneLine(r.Description, maxRowDescription)
	return r
}

// oneLine returns the first line of s with its runs of white space made one
// space, cut between words to at most limit characters, an ellipsis
// included.
func oneLine(s string, limit int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i]
	}
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= limit {
		return s
	}
	cut, n := 0, 0
	for i := range s {
		if n == limit-1 {
			cut = i
			break
		}
		n++
	}
	if s[cut] != ' ' {
		if sp := strings.LastIndexByte(s[:cut], ' '); sp > 0 {
			cut = sp
		}
	}
	return strings.TrimRight(s[:cut], " ,;:") + "…"
}
