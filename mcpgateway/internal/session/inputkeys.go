package session

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"slices"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
)

// A 2026-07-28 server's input_required result names each of its questions
// with a key, and the retry answers each under its key. mcp-go's retry
// loop hands each question to the handler of its kind without the key, so
// the transport (history.send) records the round in the call's
// inputRound as the result passes, and each handler claims the key of the
// question it was given: the call's client (the aggregate endpoint's) is
// then asked under the server's own key, knows how many questions the
// round has, and may have answered that key before it was asked.

// maxInputKeyBytes bounds a server's key that is passed on; a longer one
// is replaced by the asker's own.
const maxInputKeyBytes = 128

// maxRoundKeys bounds the questions of a round whose keys are recorded: a
// round of more (the server's count) is not recorded, and its questions
// are asked under the asker's own keys, so that no handler's claim costs
// more than a short scan.
const maxRoundKeys = 64

// inputRoundKey is the context key of a call's inputRound.
type inputRoundKey struct{}

// inputRound is the questions of a call's last input_required result that
// no handler has claimed yet. It is safe for concurrent use: mcp-go
// answers a round's questions concurrently.
type inputRound struct {
	mu   sync.Mutex
	open map[string]mcp.InputRequest
	keys []string // open's keys as recorded, sorted: the order claims take them in
	size int
}

// withInputRound returns ctx with a new inputRound for the requests sent
// with it.
func withInputRound(ctx context.Context) context.Context {
	return context.WithValue(ctx, inputRoundKey{}, &inputRound{})
}

// noteInputRound records result, the answer to a request sent with ctx,
// when it is an input_required result and ctx has an inputRound.
func noteInputRound(ctx context.Context, result json.RawMessage) {
	r, ok := ctx.Value(inputRoundKey{}).(*inputRound)
	if !ok || !bytes.Contains(result, []byte(`"input_required"`)) {
		return
	}
	var res struct {
		ResultType    string            `json:"resultType"`
		InputRequests mcp.InputRequests `json:"inputRequests"`
	}
	if json.Unmarshal(result, &res) != nil || res.ResultType != string(mcp.ResultTypeInputRequired) {
		return
	}
	keys := slices.Sorted(maps.Keys(res.InputRequests))
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(keys) > maxRoundKeys {
		r.open, r.keys, r.size = nil, nil, 0
		return
	}
	r.open, r.keys, r.size = res.InputRequests, keys, len(keys)
}

// claim returns the key of the first unclaimed question of the round that
// is method with params, and the number of questions in the round; "" when
// none is.
func (r *inputRound) claim(method mcp.MCPMethod, params any) (string, int) {
	want, err := json.Marshal(params)
	if err != nil {
		return "", 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range r.keys {
		q, ok := r.open[k]
		if !ok || q.Method != method || !sameParams(q, want) {
			continue
		}
		delete(r.open, k)
		if len(k) > maxInputKeyBytes {
			return "", r.size
		}
		return k, r.size
	}
	return "", r.size
}

// sameParams reports whether q's params encode as want.
func sameParams(q mcp.InputRequest, want []byte) bool {
	var p any
	switch q.Method {
	case mcp.MethodElicitationCreate:
		p = q.Elicitation
	case mcp.MethodSamplingCreateMessage:
		p = q.Sampling
	default:
		return true // roots/list has nothing to tell two apart
	}
	got, err := json.Marshal(p)
	return err == nil && bytes.Equal(got, want)
}

// inputKeyKey is the context key of WithInputKey.
type inputKeyKey struct{}

type inputKey struct {
	key  string
	size int
}

// claimInputKey returns ctx with the key of the question method with params
// of the call's round, claimed, if its server named one (InputKeyFrom).
func claimInputKey(ctx context.Context, method mcp.MCPMethod, params any) context.Context {
	r, ok := ctx.Value(inputRoundKey{}).(*inputRound)
	if !ok {
		return ctx
	}
	key, size := r.claim(method, params)
	return context.WithValue(ctx, inputKeyKey{}, inputKey{key, size})
}

// InputKeyFrom returns the key a 2026-07-28 server named the question
// asked with ctx by, and how many questions its round has; "" and 0 for a
// question that came otherwise (a request of an earlier protocol's
// server).
func InputKeyFrom(ctx context.Context) (key string, roundSize int) {
	k, _ := ctx.Value(inputKeyKey{}).(inputKey)
	return k.key, k.size
}
