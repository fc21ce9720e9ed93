package catalog

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
)

// A catalogue's tools/list pages are encoded once, its tools as the
// servers sent them: mcp-go's Tool.MarshalJSON would build a map of every
// tool and compact its schemas twice on every request (7 ms for 1,000
// tools), drop annotations it does not know and HTML-escape the schemas.

// pageSize is the most tools one tools/list page holds.
const pageSize = 1000

// PageOf returns the page of list that cursor names, and the cursor of
// the next page, "" after the last; a cursor that is not one of ours
// starts from the top.
func PageOf(list []mcp.Tool, cursor mcp.Cursor) ([]mcp.Tool, mcp.Cursor) {
	start := pageStart(string(cursor), len(list))
	end := min(len(list), start+pageSize)
	var next mcp.Cursor
	if end < len(list) {
		next = mcp.Cursor(nextCursor(end))
	}
	return list[start:end], next
}

// encodeTool writes en to b as tools/list gives it: its name, and its
// description, schemas and annotations as the server sent them.
func encodeTool(b *bytes.Buffer, en *Entry) {
	b.WriteString(`{"name":`)
	writeString(b, en.Name)
	if en.Info.Description != "" {
		b.WriteString(`,"description":`)
		writeString(b, en.Info.Description)
	}
	writeRaw(b, "inputSchema", en.Info.InputSchema)
	writeRaw(b, "outputSchema", en.Info.OutputSchema)
	writeRaw(b, "annotations", en.Info.Annotations)
	b.WriteByte('}')
}

// writeString writes s as a JSON string, with <, > and & as they are.
func writeString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	b.Truncate(b.Len() - 1)
}

// writeRaw writes ,"key":raw when raw is set. The gateway keeps the
// server's bytes of a valid JSON value; they are compacted (a stdio client
// reads one message a line), and a value that is not JSON is left out.
func writeRaw(b *bytes.Buffer, key string, raw json.RawMessage) {
	if len(raw) == 0 {
		return
	}
	n := b.Len()
	b.WriteString(`,"` + key + `":`)
	if json.Compact(b, raw) != nil {
		b.Truncate(n)
	}
}

// pageKey names a page of a catalog's list: where it starts, and whether
// the list ends with ask.
type pageKey struct {
	start int
	ask   bool
}

// Page returns the result object of the tools/list page of c that cursor
// names (a cursor that is not one of ours starts from the top), with the
// ask tool at the end of the list when withAsk: {"nextCursor":...,
// "tools":[...]}, without the nextCursor on the last page. It must not be
// changed.
func (c *Catalog) Page(cursor string, withAsk bool) []byte {
	n := len(c.entries)
	if withAsk {
		n++
	}
	return c.page(pageStart(cursor, n), withAsk)
}

// page returns the result object of the page of c's list starting at
// start, with ask at the end of the list when withAsk. The pages starting
// where our cursors point are built once; a page at any other start is
// built for the request.
func (c *Catalog) page(start int, withAsk bool) []byte {
	key := pageKey{start, withAsk}
	c.pagesMu.Lock()
	b, ok := c.pages[key]
	c.pagesMu.Unlock()
	if ok {
		return b
	}
	n := len(c.entries)
	if withAsk {
		n++
	}
	start = min(start, n)
	end := min(n, start+pageSize)
	var buf bytes.Buffer
	buf.WriteByte('{')
	if end < n {
		buf.WriteString(`"nextCursor":`)
		writeString(&buf, nextCursor(end))
		buf.WriteByte(',')
	}
	buf.WriteString(`"tools":[`)
	for i := start; i < end; i++ {
		if i > start {
			buf.WriteByte(',')
		}
		if i == len(c.entries) {
			buf.Write(askEncoded())
			continue
		}
		encodeTool(&buf, &c.entries[i])
	}
	buf.WriteString("]}")
	b = buf.Bytes()
	if start%pageSize == 0 {
		c.pagesMu.Lock()
		if c.pages == nil {
			c.pages = map[pageKey][]byte{}
		}
		c.pages[key] = b
		c.pagesMu.Unlock()
	}
	return b
}

// askEncoded is the ask tool as tools/list gives it.
var askEncoded = sync.OnceValue(func() []byte {
	b, _ := json.Marshal(AskTool()) // a fixed tool: cannot fail
	return b
})

// pageStart is the first index of the page cursor names in a list of n; a
// cursor that is not one of ours starts from the top.
func pageStart(cursor string, n int) int {
	if cursor == "" {
		return 0
	}
	b, err := base64.StdEncoding.DecodeString(cursor)
	if err != nil {
		return 0
	}
	i, err := strconv.Atoi(strings.TrimPrefix(string(b), "o:"))
	if err != nil || i < 0 || i > n {
		return 0
	}
	return i
}

// nextCursor is the cursor of the page starting at index i.
func nextCursor(i int) string {
	return base64.StdEncoding.EncodeToString([]byte("o:" + strconv.Itoa(i)))
}
