package tree

import (
	"bytes"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/elysia-go/elysia/tools"
)

// MarshalJSON renders the tree as Elysia's frontend expects it: every node and
// option as {"name", "id", "description", "instruction", "reasoning",
// "branch", "options"} in that order, options keyed by id in tree order.
//
// A tool followed by chained tools is rendered from its sub-node, as Elysia
// does: its name and id are the sub-node's ("Base.query", "base.query"), its
// branch is false, and its options are the chained tools.
//
// The JSON is cached: a default tree is shared by every idle conversation
// and rendered for each GET /tree. The cache is keyed by the options'
// descriptions, which change while the tree stands (a gateway appends the
// names of the tools it has listed). The returned bytes are shared and must
// not be modified (encoding/json copies them).
func (t *Tree) MarshalJSON() ([]byte, error) {
	descs := t.descriptions()
	if r := t.rendered.Load(); r != nil && slices.Equal(r.descs, descs) {
		return r.json, nil
	}
	var b bytes.Buffer
	b.Grow(256 + 256*len(t.root.options))
	writeNode(&b, t.root.id, "", t.root.instruction, true, t.root.options)
	t.rendered.Store(&rendering{descs: descs, json: b.Bytes()})
	return b.Bytes(), nil
}

// rendering is a tree's JSON and the descriptions it was rendered with.
type rendering struct {
	descs []string
	json  []byte
}

// descriptions returns every option's description, depth first.
func (t *Tree) descriptions() []string {
	var out []string
	t.root.walk(func(_ *Node, o *option) bool {
		out = append(out, o.description())
		return true
	})
	return out
}

func writeNode(b *bytes.Buffer, id, description, instruction string, branch bool, options []*option) {
	b.WriteString(`{"name":`)
	tools.WriteJSONString(b, displayName(id))
	b.WriteString(`,"id":`)
	tools.WriteJSONString(b, id)
	b.WriteString(`,"description":`)
	tools.WriteJSONString(b, description)
	b.WriteString(`,"instruction":`)
	tools.WriteJSONString(b, instruction)
	b.WriteString(`,"reasoning":"","branch":`)
	if branch {
		b.WriteString("true")
	} else {
		b.WriteString("false")
	}
	b.WriteString(`,"options":{`)
	for i, o := range options {
		if i > 0 {
			b.WriteByte(',')
		}
		tools.WriteJSONString(b, o.id)
		b.WriteByte(':')
		if o.next == nil {
			writeNode(b, o.id, o.description(), "", false, nil)
			continue
		}
		writeNode(b, o.next.id, o.description(), o.next.instruction, o.isBranch(), o.next.options)
	}
	b.WriteString("}}")
}

// displayName is Elysia's node name: Python's str.capitalize of the id (first
// letter upper case, the rest lower case) with "_" turned into spaces.
func displayName(id string) string {
	r, size := utf8.DecodeRuneInString(id)
	if size == 0 {
		return ""
	}
	return string(unicode.ToTitle(r)) + strings.ReplaceAll(strings.ToLower(id[size:]), "_", " ")
}
