package jsonscan

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// decoded is the members or elements of a JSON object or array as
// encoding/json's Decoder reads them: keys unescaped, values as sent.
func decoded(t *testing.T, b []byte) (keys []string, vals []string, object bool) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		t.Fatal(err)
	}
	object = tok == json.Delim('{')
	for dec.More() {
		if object {
			tok, err := dec.Token()
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, tok.(string))
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			t.Fatal(err)
		}
		vals = append(vals, string(raw))
	}
	return keys, vals, object
}

func unescape(t *testing.T, key []byte) string {
	t.Helper()
	var s string
	if err := json.Unmarshal(append(append([]byte{'"'}, key...), '"'), &s); err != nil {
		t.Fatalf("key %q: %v", key, err)
	}
	return s
}

var seeds = []string{
	`{"jsonrpc":"2.0","id":"a\"b","result":{"content":[{"type":"text","text":"}]"}]}}`,
	` { "a" : [ 1 , { "b" : "\\" } ] , "c" : null , "d":true,"e":-1.5e3 } `,
	`{}`, `[]`, `[1,"x",{"y":[]},[[]],null]`, `{"\u0069d":1,"k\\":2}`, "{\"\xff\":\"\xfe\"}",
}

func FuzzMembers(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		i := SkipSpace(b, 0)
		if b[i] != '{' && b[i] != '[' {
			return
		}
		keys, vals, object := decoded(t, b)
		var gotKeys, gotVals []string
		if object {
			for k, v := range Members(b) {
				gotKeys = append(gotKeys, unescape(t, k))
				gotVals = append(gotVals, string(v))
			}
		} else {
			for v := range Elements(b) {
				gotVals = append(gotVals, string(v))
			}
		}
		if len(gotKeys) != len(keys) || len(gotVals) != len(vals) {
			t.Fatalf("%q: got %q %q, want %q %q", b, gotKeys, gotVals, keys, vals)
		}
		for i := range vals {
			if object && gotKeys[i] != keys[i] || gotVals[i] != vals[i] {
				t.Fatalf("%q: member %d got %q %q, want %q %q", b, i, gotKeys, gotVals, keys, vals)
			}
		}
		if end := SkipValue(b, i); SkipSpace(b, end) != len(b) {
			t.Errorf("%q: SkipValue ends at %d", b, end)
		}
	})
}

func TestPlain(t *testing.T) {
	for in, want := range map[string]string{`"abc"`: "abc", `""`: "", `"é"`: "é"} {
		if s, ok := Plain([]byte(in)); !ok || string(s) != want {
			t.Errorf("Plain(%s) = %q, %v", in, s, ok)
		}
	}
	for _, in := range []string{`"a\"b"`, "\"\xff\"", `5`, `null`, `"`} {
		if _, ok := Plain([]byte(in)); ok {
			t.Errorf("Plain(%s) is plain", in)
		}
	}
}

// TestEarlyStop: a loop that breaks stops the walk.
func TestEarlyStop(t *testing.T) {
	n := 0
	for range Members([]byte(`{"a":1,"b":2,"c":3}`)) {
		n++
		if n == 2 {
			break
		}
	}
	for range Elements([]byte(`[1,2,3]`)) {
		n++
		break
	}
	if n != 3 {
		t.Errorf("%d iterations, want 3", n)
	}
}

// FuzzValue holds Value to encoding/json's Decoder with UseNumber.
func FuzzValue(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"a":1,"a":{"b":[1.5e3,-0,"\ud800x"]},"\u00e9":true}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var want any
		if err := dec.Decode(&want); err != nil {
			t.Fatal(err)
		}
		i := SkipSpace(b, 0)
		if got := Value(b[i:SkipValue(b, i)]); !reflect.DeepEqual(got, want) {
			t.Errorf("%q: Value = %#v, want %#v", b, got, want)
		}
	})
}

func TestMayName(t *testing.T) {
	for key, want := range map[string]bool{"content": true, "CONTENT": true, "isError": true, "conten": false,
		"extra": false, `con\u0074ent`: true, "\u017f": true, "cont\xc3\xa9nt": true} {
		if got := MayName([]byte(key), "content", "isError"); got != want {
			t.Errorf("MayName(%q) = %v, want %v", key, got, want)
		}
	}
}
