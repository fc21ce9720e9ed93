package store

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestSplitPacked(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{`[]`, []string{}},
		{` [ ] `, []string{}},
		{`[{"a":1}]`, []string{`{"a":1}`}},
		{`[{"a":"x,]}"},["b",{"c":[1,2]}], "s\"]," ,3 ,null]`, []string{`{"a":"x,]}"}`, `["b",{"c":[1,2]}]`, `"s\"],"`, `3`, `null`}},
		{`[{"a":"\\"},{}]`, []string{`{"a":"\\"}`, `{}`}},
	} {
		got, err := splitPacked([]byte(tc.in))
		if err != nil {
			t.Errorf("splitPacked(%s): %v", tc.in, err)
			continue
		}
		if !slices.Equal(rawStrings(got), tc.want) {
			t.Errorf("splitPacked(%s) = %q, want %q", tc.in, rawStrings(got), tc.want)
		}
	}
	for _, in := range []string{``, `{}`, `[`, `[1,]`, `[,1]`, `[1,,2]`, `[{]`, `[{"a":"]}`, `[}]`, `["x]`, `[{}}, {{}]`} {
		if got, err := splitPacked([]byte(in)); err == nil {
			t.Errorf("splitPacked(%s) = %q, want an error", in, rawStrings(got))
		}
	}
}

// TestSplitPackedKeepsNeighbours appends to an element: the next one is
// not overwritten.
func TestSplitPackedKeepsNeighbours(t *testing.T) {
	got, err := splitPacked([]byte(`[{"a":1},{"b":2}]`))
	if err != nil {
		t.Fatal(err)
	}
	_ = append(got[0], "garbage"...)
	if string(got[1]) != `{"b":2}` {
		t.Errorf("the second element became %s", got[1])
	}
}

// FuzzSplitPacked holds splitPacked to encoding/json on every array it
// reads, and to the events a pack holds.
func FuzzSplitPacked(f *testing.F) {
	for _, s := range []string{`[]`, `[{"a":"x,]}"},["b"],3]`, `[{"a":"\\"}]`, `["\u005d"]`, `[1,]`, `{"a":[1]}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var want []json.RawMessage
		got, err := splitPacked([]byte(in))
		if json.Unmarshal([]byte(in), &want) == nil && want != nil {
			if err != nil {
				t.Fatalf("splitPacked(%q): %v; encoding/json reads %q", in, err, rawStrings(want))
			}
			if !slices.Equal(rawStrings(got), rawStrings(want)) {
				t.Fatalf("splitPacked(%q) = %q, encoding/json reads %q", in, rawStrings(got), rawStrings(want))
			}
		}
		if !json.Valid([]byte(in)) {
			return
		}
		// A valid value as an event, packed with others, comes back as it was.
		events := []NewEvent{{Envelope: json.RawMessage(`{"x":1}`)}, {Envelope: json.RawMessage(in)}, {Envelope: json.RawMessage(`[]`)}}
		var p pack
		if err := p.events("q", events, nil); err != nil {
			t.Fatal(err)
		}
		packed := p.envelopes
		back, err := splitPacked(packed)
		if err != nil {
			t.Fatalf("splitPacked(%q): %v", packed, err)
		}
		wantBack := []string{`{"x":1}`, string(trimSpace([]byte(in))), `[]`}
		if !slices.Equal(rawStrings(back), wantBack) {
			t.Fatalf("packed %q, split %q, want %q", packed, rawStrings(back), wantBack)
		}
	})
}

func rawStrings(raws []json.RawMessage) []string {
	out := make([]string, len(raws))
	for i, r := range raws {
		out[i] = string(r)
	}
	return out
}
