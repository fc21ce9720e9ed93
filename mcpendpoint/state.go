package mcpendpoint

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// The requestState of an input_required result (SEP-2322) names the call
// that waits for the client's answers: its id, the replica holding it and
// the round it asks in. The client holds it for the endpoint, so it is
// sealed: HMAC-SHA256 with Options.StateKey over what it says, which
// binds it to its user (by hash), to the request (the tool's name and its
// arguments, by hash) and to an expiry. Any replica sharing the key can
// open it; nothing in it is secret (the client's own user and tool).

// stateKeySize is the size of the key the endpoint makes for itself when
// Options.StateKey is empty.
const stateKeySize = 32

// stateMACLabel separates this MAC from any other made with the same key.
const stateMACLabel = "elysia mcpendpoint requestState v1\x00"

// maxStateLen bounds a requestState the endpoint opens: its own are about
// 250 bytes.
const maxStateLen = 1024

// callState is what a requestState says.
type callState struct {
	// Call is the held call's id.
	Call string `json:"c"`
	// Replica is the tag of the replica holding the call.
	Replica string `json:"r"`
	// Round is the input_required round it answers, from 1.
	Round int `json:"n"`
	// Expires is when the call stops waiting for this round's answers,
	// in Unix seconds.
	Expires int64 `json:"e"`
	// User and Bind are the hashes of the user and of the request
	// (userHash, bindHash), in base64.
	User []byte `json:"u"`
	Bind []byte `json:"b"`
}

// userHash is what a requestState keeps of its user.
func userHash(user string) []byte {
	sum := sha256.Sum256([]byte("user\x00" + user))
	return sum[:16]
}

// bindHash is what a requestState keeps of its request: the tool's name as
// the client called it and its arguments, canonical (keys in order, no
// spaces, numbers as sent), so that a client that encodes them again on
// the retry still matches.
func bindHash(tool string, args map[string]any) []byte {
	b, _ := json.Marshal(args) // decoded from JSON: encodes again
	h := sha256.New()
	h.Write([]byte(tool))
	h.Write([]byte{0})
	h.Write(b)
	return h.Sum(nil)[:16]
}

// newStateKey returns a random key for a process whose requestStates no
// other replica opens.
func newStateKey() []byte {
	k := make([]byte, stateKeySize)
	_, _ = rand.Read(k) // crypto/rand.Read never fails
	return k
}

// seal returns s as a requestState.
func (e *Endpoint) seal(s callState) string {
	payload, _ := json.Marshal(s) // plain fields: cannot fail
	p := base64.RawURLEncoding.EncodeToString(payload)
	return p + "." + base64.RawURLEncoding.EncodeToString(e.stateMAC(p))
}

func (e *Endpoint) stateMAC(payload string) []byte {
	m := hmac.New(sha256.New, e.stateKey)
	m.Write([]byte(stateMACLabel))
	m.Write([]byte(payload))
	return m.Sum(nil)
}

// openState opens requestState text, checking its seal and its expiry.
// Its errors match ErrRequestState and say which check failed.
func (e *Endpoint) openState(text string, now time.Time) (callState, error) {
	var s callState
	p, mac, ok := strings.Cut(text, ".")
	if !ok || len(text) > maxStateLen {
		return s, stateError("it is not one this service issued")
	}
	got, err := base64.RawURLEncoding.DecodeString(mac)
	if err != nil || !hmac.Equal(got, e.stateMAC(p)) {
		return s, stateError("it is not one this service issued, or it was altered")
	}
	payload, err := base64.RawURLEncoding.DecodeString(p)
	if err != nil || json.Unmarshal(payload, &s) != nil {
		return s, stateError("it is not one this service issued")
	}
	if now.Unix() > s.Expires {
		return s, stateError(fmt.Sprintf("it expired (a call waits %v for its client's answers): call the tool again", e.opts.InputWait))
	}
	return s, nil
}

// openStateOf opens requestState text of a request of user (openState)
// and checks that it was issued to user, for the request bind hashes.
func (e *Endpoint) openStateOf(text, user string, bind []byte, now time.Time) (callState, error) {
	s, err := e.openState(text, now)
	switch {
	case err != nil:
		return s, err
	case !bytes.Equal(s.User, userHash(user)):
		return s, stateError("it was issued to another user")
	case !bytes.Equal(s.Bind, bind):
		return s, stateError("it was issued for another request: the retry must name the same tool with the same arguments")
	}
	return s, nil
}

// stateError is a refused requestState's error.
func stateError(why string) error {
	return fmt.Errorf("%w: %s", ErrRequestState, why)
}
