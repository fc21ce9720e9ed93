package tools

import (
	"encoding/json"
	"fmt"
	"testing"
)

func TestSeal(t *testing.T) {
	m := map[string]any{"type": "object", "properties": map[string]any{"a <b>": map[string]any{"enum": []any{"x", 1.5}}}}
	if _, ok := SealedJSON(m); ok {
		t.Fatal("SealedJSON of a map not sealed: true")
	}
	if got := Seal(m); fmt.Sprintf("%p", got) != fmt.Sprintf("%p", m) {
		t.Error("Seal did not return its map")
	}
	want, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := SealedJSON(m)
	if !ok || string(got) != string(want) {
		t.Errorf("SealedJSON = %s, %v; want %s, true", got, ok, want)
	}
	// An equal map is another map: not sealed.
	other := map[string]any{"type": "object"}
	if _, ok := SealedJSON(other); ok {
		t.Error("SealedJSON of another map: true")
	}
	if Seal(nil) != nil {
		t.Error("Seal(nil) is not nil")
	}
	if _, ok := SealedJSON(nil); ok {
		t.Error("SealedJSON(nil): true")
	}
	// A map that does not encode is not sealed.
	bad := map[string]any{"f": func() {}}
	Seal(bad)
	if _, ok := SealedJSON(bad); ok {
		t.Error("SealedJSON of a map that does not encode: true")
	}
}

// TestSealForgetsPastItsBound: past maxSealed maps, the earlier ones are
// forgotten (encoded again by their users), the last one kept.
func TestSealForgetsPastItsBound(t *testing.T) {
	first := Seal(map[string]any{"n": -1})
	var last map[string]any
	for i := range maxSealed {
		last = Seal(map[string]any{"n": i})
	}
	if _, ok := SealedJSON(first); ok {
		t.Errorf("the first of %d sealed maps is still kept", maxSealed+1)
	}
	if raw, ok := SealedJSON(last); !ok || string(raw) != fmt.Sprintf(`{"n":%d}`, maxSealed-1) {
		t.Errorf("SealedJSON(last) = %s, %v", raw, ok)
	}
}
