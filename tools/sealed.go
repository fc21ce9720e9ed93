package tools

import (
	"encoding/json"
	"reflect"
	"sync"
	"sync/atomic"
)

// maxSealed bounds the maps Seal keeps the JSON of. Past it every one is
// forgotten (SealedJSON then says so, and the caller encodes the map as
// usual): sealed maps are a tree's option schemas, a few per tool, built
// again only when the servers change.
const maxSealed = 4096

// sealed maps a sealed map's pointer (its reflect UnsafePointer) to the map (kept alive, so that the
// pointer is not reused while kept) and its JSON.
var (
	sealed      sync.Map // unsafe.Pointer → sealedMap
	sealedCount atomic.Int64
)

type sealedMap struct {
	m   map[string]any
	raw json.RawMessage
}

// Seal encodes m (with encoding/json) once and keeps the JSON for
// SealedJSON, then returns m; it is for a map built once and read many
// times, such as an option's JSON Schema sent with every decision. m, and
// every map and slice in it, must never change afterwards: SealedJSON
// would go on returning the old JSON. A map that does not encode is not
// sealed.
func Seal(m map[string]any) map[string]any {
	if m == nil {
		return m
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return m
	}
	if sealedCount.Add(1) > maxSealed {
		sealed.Clear()
		sealedCount.Store(1)
	}
	sealed.Store(reflect.ValueOf(m).UnsafePointer(), sealedMap{m: m, raw: raw})
	return m
}

// SealedJSON returns the JSON Seal kept of m, which is what json.Marshal
// writes for m, and true; or false when m was not sealed (or was
// forgotten since). The JSON is shared: it must not be changed.
func SealedJSON(m map[string]any) (json.RawMessage, bool) {
	if m == nil {
		return nil, false
	}
	v, ok := sealed.Load(reflect.ValueOf(m).UnsafePointer())
	if !ok {
		return nil, false
	}
	return v.(sealedMap).raw, true
}
