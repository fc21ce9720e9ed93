package prompt

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/elysia-go/elysia/tools"
)

// entryFormsOf returns the forms of entry i of l, whole only if it takes at
// most room bytes. An entry of this query is marshalled (once per query,
// with cache) and its short form has a preview; an earlier one is
// marshalled only when a cheap estimate says it may fit in room whole, and
// its short form is a digest, kept in cache from one query to the next
// (see FormCache): every query of a long conversation showed the same
// digests, made anew by each.
func entryFormsOf(l *promptList, i int, old bool, room int, cache *FormCache) (*entryForms, error) {
	ref, e := entryRef{l.key, i}, l.entries[i]
	kept := cache.lookup(ref, e, old)
	if kept != nil && (kept.whole != nil || kept.size > room) {
		return kept, nil
	}
	f := &entryForms{first: firstObject(e), n: len(e.Objects)}
	if old {
		if kept != nil {
			f.short = kept.short // a digest: kept.whole is nil
		} else {
			f.short = digestEntry(e)
		}
		if least := minSize(e, room); least > room {
			f.size = least // at least: it fits no room smaller than that
		} else {
			whole, err := e.JSON()
			if err != nil {
				return nil, err
			}
			f.size = len(whole)
			if len(whole) < len(f.short) {
				f.short = whole
			}
			f.whole = whole
		}
		cache.keep(ref, f, old)
		return f, nil
	}
	whole, err := e.JSON()
	if err != nil {
		return nil, err
	}
	f.size = len(whole)
	short, err := shortEntry(e, whole)
	if err != nil {
		return nil, err
	}
	if len(short) >= len(whole) {
		short = whole
	}
	f.short = short
	if len(whole) <= room {
		f.whole = whole
	}
	cache.keep(ref, f, old)
	return f, nil
}

// shortEntry returns the truncated form of e, given its JSON: one object
// with the first _REF_ID, what was left out and a preview, and the
// metadata when it is small.
func shortEntry(e tools.EnvEntry, whole []byte) ([]byte, error) {
	obj := map[string]any{}
	note := fmt.Sprintf("%d bytes left out of this prompt to keep it short", len(whole))
	if n := len(e.Objects); n > 0 {
		first, _ := e.Objects[0][tools.RefIDKey].(string)
		last, _ := e.Objects[n-1][tools.RefIDKey].(string)
		obj[tools.RefIDKey] = first
		if n == 1 {
			note = fmt.Sprintf("1 object, %s; the user sees it in full", note)
		} else {
			note = fmt.Sprintf("%d objects (%s to %s), %s; the user sees them in full", n, first, last, note)
		}
		// The objects' JSON starts after {"objects":[; cut reads at most
		// previewBytes+1 bytes of it.
		objs := whole[len(`{"objects":[`):]
		obj["_PREVIEW"] = cut(string(objs[:min(len(objs), previewBytes+1)]), previewBytes)
	}
	obj[truncatedKey] = note
	md, err := tools.Marshal(e.Metadata)
	if err != nil {
		return nil, err
	}
	if len(md) > maxShortMetadata {
		md = fmt.Appendf(nil, `{%q:"%d bytes left out"}`, truncatedKey, len(md))
	}
	return tools.Marshal(shortForm{Objects: []any{obj}, Metadata: md})
}

// shortForm is a truncated entry or a note, keyed like a tools.EnvEntry.
type shortForm struct {
	Objects  []any           `json:"objects"`
	Metadata json.RawMessage `json:"metadata"`
}

// digestEntry is the short form of an earlier query's entry: its first
// _REF_ID and a one-line digest (how many objects, their keys), made
// without marshalling the objects.
func digestEntry(e tools.EnvEntry) []byte {
	obj := map[string]any{}
	text := "no objects"
	if n := len(e.Objects); n > 0 {
		first, _ := e.Objects[0][tools.RefIDKey].(string)
		obj[tools.RefIDKey] = first
		keys := make([]string, 0, len(e.Objects[0]))
		for k := range e.Objects[0] {
			if k != tools.RefIDKey {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		text = cut(strings.Join(keys, ", "), previewBytes/2)
		if n == 1 {
			text = "1 object of an earlier query, left out to keep the prompt short; keys: " + text
		} else {
			last, _ := e.Objects[n-1][tools.RefIDKey].(string)
			text = fmt.Sprintf("%d objects (%s to %s) of an earlier query, left out to keep the prompt short; keys: %s", n, first, last, text)
		}
	}
	obj[truncatedKey] = text
	out, _ := tools.Marshal(shortForm{Objects: []any{obj}, Metadata: json.RawMessage("{}")})
	return out
}

// minSize returns a lower bound of the size of v's JSON, or a number over
// limit as soon as it knows that the size is over limit. It reads at most
// about limit bytes of v.
func minSize(v any, limit int) int {
	n := 0
	var walk func(v any)
	walk = func(v any) {
		if n > limit {
			return
		}
		switch x := v.(type) {
		case string:
			n += len(x) + 2
		case map[string]any:
			n += 2
			for k, e := range x {
				n += len(k) + 3
				walk(e)
				if n > limit {
					return
				}
			}
		case []any:
			n += 2
			for _, e := range x {
				walk(e)
				n++
				if n > limit {
					return
				}
			}
		case []map[string]any:
			n += 2
			for _, e := range x {
				walk(e)
				n++
				if n > limit {
					return
				}
			}
		case tools.EnvEntry:
			n += len(`{"objects":,"metadata":}`)
			walk(x.Objects)
			walk(x.Metadata)
		case []string:
			for _, e := range x {
				n += len(e) + 3
				if n > limit {
					return
				}
			}
		default:
			n++
		}
	}
	walk(v)
	return n
}

// cut returns s cut to at most n bytes, on a rune boundary, marked with …
// when cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// quotedLen is the length of s written as a JSON string.
func quotedLen(s string) int {
	if tools.PlainJSONString(s) {
		return len(s) + 2
	}
	enc, _ := tools.Marshal(s)
	return len(enc)
}
