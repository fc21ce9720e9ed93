package mcpconfig

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/tailscale/hujson"
)

// Edit is an mcp.json file being changed one server entry at a time, in
// whichever dialect it is written (VS Code "servers" object, Claude
// "mcpServers" object, the seeds' list), keeping every comment, blank line
// and indentation that the change does not touch. New text is indented as
// the file is. An Edit is not safe for concurrent use.
type Edit struct {
	file string
	root hujson.Value
	unit string // one level of indentation, as the file has it
	// orig is the file as it was, to tell whether anything changed.
	orig []byte
}

// NewEdit starts editing data, the contents of file (named in errors). Empty
// data (or only white space) is a new file. A file that is not JSON with
// comments is a *ConfigError at the position of the problem, matching
// ErrInvalidConfig.
func NewEdit(file string, data []byte) (*Edit, error) {
	e := &Edit{file: file, orig: bytes.Clone(data), unit: indentUnit(data)}
	if len(bytes.TrimSpace(data)) == 0 {
		e.root = hujson.Value{Value: &hujson.Object{AfterExtra: hujson.Extra("\n")}, AfterExtra: hujson.Extra("\n")}
		return e, nil
	}
	// The tree decoder bounds nesting and locates a syntax error: only a
	// file it reads is handed to hujson, whose parser recurses.
	if root, errs := decodeTree(data); root == nil && len(errs) > 0 {
		line, col := newLineIndex(data).position(errs[0].off)
		return nil, &ConfigError{File: file, Line: line, Column: col, Msg: errs[0].msg}
	}
	src := bytes.Clone(data)
	v, err := hujson.Parse(src)
	if err != nil {
		// hujson wants a line comment to end in a newline.
		src = append(bytes.Clone(data), '\n')
		if v, err = hujson.Parse(src); err != nil {
			return nil, &ConfigError{File: file, Msg: "cannot edit: " + err.Error(), Err: err}
		}
	}
	e.root = v
	return e, nil
}

// Bytes returns the file as edited so far.
func (e *Edit) Bytes() []byte {
	if len(bytes.TrimSpace(e.orig)) == 0 && len(e.containers()) == 0 {
		return bytes.Clone(e.orig)
	}
	return e.root.Pack()
}

// Has reports whether the file has a server entry called name.
func (e *Edit) Has(name string) bool {
	_, _, ok := e.find(name)
	return ok
}

// Entry returns the server entry called name as standard JSON (comments
// removed), or an error matching ErrNoServer.
func (e *Edit) Entry(name string) ([]byte, error) {
	c, i, ok := e.find(name)
	if !ok {
		return nil, e.noServer(name)
	}
	v := c.item(i).Clone()
	v.Minimize()
	return v.Pack(), nil
}

// Add appends a server entry called name to the file's servers (the first
// "servers" or "mcpServers" block, or the list; a file with none gets a
// "servers" object). entry is a JSON object without "name"; in the list
// dialect "name" is written first. A server of that name already in the file
// is an error matching ErrServerExists, and nothing changes.
func (e *Edit) Add(name string, entry []byte) error {
	if e.Has(name) {
		return fmt.Errorf("%s: server %q: %w", e.file, name, ErrServerExists)
	}
	members, err := objectMembers(entry)
	if err != nil {
		return fmt.Errorf("server %q: entry: %w", name, err)
	}
	cs := e.ownContainers()
	if len(cs) == 0 {
		root, ok := e.root.Value.(*hujson.Object)
		if !ok {
			return &ConfigError{File: e.file, Msg: "cannot add a server: the top level is not an object or a list"}
		}
		servers := hujson.Value{Value: &hujson.Object{}}
		ind, multi := indentOf(objectItems{root}, "", e.unit, e.multiline())
		appendMember(objectItems{root}, ind, "", multi, "servers", servers)
		cs = e.ownContainers()
	}
	c := cs[0]
	if c.list {
		members = append([]member{{key: "name", val: mustJSON(name)}}, members...)
	}
	ind, multi := indentOf(c.items, c.indent, e.unit, e.multiline())
	val := newValue(objectJSON(members), ind, e.unit, multi, true)
	if c.list {
		appendElement(c.items.(arrayItems), ind, c.indent, multi, val)
		return nil
	}
	appendMember(c.items.(objectItems), ind, c.indent, multi, name, val)
	return nil
}

// Update changes the server entry called name: each key of entry (a JSON
// object) replaces the entry's value of that key in place (on one line
// when the old value was), or is added at the end when the entry lacks it, and each key listed in drop that entry
// does not have is removed. Every other key of the entry, and the comments
// around them, stay. No entry of that name is an error matching ErrNoServer.
func (e *Edit) Update(name string, entry []byte, drop []string) error {
	c, i, ok := e.find(name)
	if !ok {
		return e.noServer(name)
	}
	members, err := objectMembers(entry)
	if err != nil {
		return fmt.Errorf("server %q: entry: %w", name, err)
	}
	v := c.item(i)
	o, ok := v.Value.(*hujson.Object)
	if !ok {
		return fmt.Errorf("%s: server %q: the entry is not an object", e.file, name)
	}
	obj := objectItems{o}
	lineIndent, _ := indentOf(c.items, c.indent, e.unit, e.multiline())
	entryMulti := bytes.IndexByte(v.Pack(), '\n') >= 0
	for _, m := range members {
		if c.list && m.key == "name" {
			continue
		}
		if j := obj.index(m.key); j >= 0 {
			old := &obj.Members[j].Value
			ind := lineIndent + e.unit
			if k := bytes.LastIndexByte(obj.Members[j].Name.BeforeExtra, '\n'); k >= 0 {
				ind = string(obj.Members[j].Name.BeforeExtra[k+1:])
			}
			// A value written on one line stays on one line.
			spread := bytes.IndexByte(hujson.Value{Value: old.Value}.Pack(), '\n') >= 0
			old.Value = newValue(m.val, ind, e.unit, spread, false).Value
			continue
		}
		ind, multi := indentOf(obj, lineIndent, e.unit, entryMulti)
		appendMember(obj, ind, lineIndent, multi, m.key, newValue(m.val, ind, e.unit, multi, false))
	}
	for _, key := range drop {
		if slices.ContainsFunc(members, func(m member) bool { return m.key == key }) || (c.list && key == "name") {
			continue
		}
		if j := obj.index(key); j >= 0 {
			removeItem(obj, j)
		}
	}
	return nil
}

// Remove removes the server entry called name, with the comments that lead
// it and its comment on the same line; no entry of that name is an error
// matching ErrNoServer.
func (e *Edit) Remove(name string) error {
	c, i, ok := e.find(name)
	if !ok {
		return e.noServer(name)
	}
	removeItem(c.items, i)
	return nil
}

func (e *Edit) noServer(name string) error {
	return fmt.Errorf("%s: server %q: %w", e.file, name, ErrNoServer)
}

// multiline reports whether the file is laid out on several lines (new
// blocks then are too).
func (e *Edit) multiline() bool {
	return len(bytes.TrimSpace(e.orig)) == 0 || bytes.IndexByte(bytes.TrimSpace(e.orig), '\n') >= 0
}

// container is a block of server entries: a "servers" or "mcpServers"
// object (name → entry) or a list of entries with "name".
type container struct {
	items  items
	list   bool
	indent string // of the line the block opens on
	// foreign marks a Zed "context_servers" or opencode "mcp" block: its
	// entries are found, changed and removed, but new ones go to a block
	// of ours, whose keys those programs do not read.
	foreign bool
}

func (c container) item(i int) *hujson.Value {
	if c.list {
		return &c.items.(arrayItems).Elements[i]
	}
	return &c.items.(objectItems).Members[i].Value
}

// containers returns the file's blocks of servers in file order, as Parse
// reads them.
func (e *Edit) containers() []container {
	switch root := e.root.Value.(type) {
	case *hujson.Array:
		return []container{{items: arrayItems{root}, list: true}}
	case *hujson.Object:
		var out []container
		ind, _ := indentOf(objectItems{root}, "", e.unit, e.multiline())
		for _, m := range root.Members {
			key := m.Name.Value.(hujson.Literal).String()
			if key == "context_servers" || key == "mcp" {
				if c, ok := foreignBlock(key, m.Value, ind, e.unit); ok {
					out = append(out, c)
				}
				continue
			}
			if key != "servers" && key != "mcpServers" {
				continue
			}
			switch v := m.Value.Value.(type) {
			case *hujson.Object:
				out = append(out, container{items: objectItems{v}, indent: ind})
			case *hujson.Array:
				if key == "servers" {
					out = append(out, container{items: arrayItems{v}, list: true, indent: ind})
				}
			}
		}
		return out
	}
	return nil
}

// ownContainers are the file's blocks of servers in our own shapes, where
// a new server goes.
func (e *Edit) ownContainers() []container {
	return slices.DeleteFunc(e.containers(), func(c container) bool { return c.foreign })
}

// foreignBlock is the container of a Zed "context_servers" or opencode
// "mcp" block (v, under key), as Parse reads them: opencode's second
// version nests its servers under "servers".
func foreignBlock(key string, v hujson.Value, ind, unit string) (container, bool) {
	obj, ok := v.Value.(*hujson.Object)
	if !ok {
		return container{}, false
	}
	if key == "mcp" && len(obj.Members) == 1 && obj.Members[0].Name.Value.(hujson.Literal).String() == "servers" {
		if inner, ok := obj.Members[0].Value.Value.(*hujson.Object); ok && (objectItems{inner}).index("type") < 0 {
			return container{items: objectItems{inner}, indent: ind + unit, foreign: true}, true
		}
	}
	return container{items: objectItems{obj}, indent: ind, foreign: true}, true
}

// find locates the entry called name.
func (e *Edit) find(name string) (container, int, bool) {
	for _, c := range e.containers() {
		if !c.list {
			if i := c.items.(objectItems).index(name); i >= 0 {
				return c, i, true
			}
			continue
		}
		for i, el := range c.items.(arrayItems).Elements {
			obj, ok := el.Value.(*hujson.Object)
			if !ok {
				continue
			}
			if j := (objectItems{obj}).index("name"); j >= 0 {
				if lit, ok := obj.Members[j].Value.Value.(hujson.Literal); ok && lit.Kind() == '"' && lit.String() == name {
					return c, i, true
				}
			}
		}
	}
	return container{}, 0, false
}
