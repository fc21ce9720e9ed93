// Package reqstate seals and opens the requestState of the MCP endpoint's
// 2026-07-28 input_required results (SEP-2322). A requestState names the
// call that waits for the client's answers: its id, the replica holding
// it and the round it asks in. The client holds it for the endpoint, so
// it is sealed: HMAC-SHA256 with a key the replicas share over what it
// says, which binds it to its user (by hash), to the request (the tool's
// name and its arguments, by hash) and to an expiry. Any replica sharing
// the key can open it; nothing in it is secret (the client's own user and
// tool).
package reqstate

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// KeySize is the size of the key NewKey makes.
const KeySize = 32

// macLabel separates this MAC from any other made with the same key.
const macLabel = "elysia mcpendpoint requestState v1\x00"

// MaxLen bounds a requestState Open opens: those Seal makes are about 250
// bytes.
const MaxLen = 1024

// ErrRefused is matched by the errors of Open and OpenFor.
var ErrRefused = errors.New("requestState refused")

// State is what a requestState says.
type State struct {
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
	// (UserHash, BindHash), in base64.
	User []byte `json:"u"`
	Bind []byte `json:"b"`
}

// UserHash is what a requestState keeps of its user.
func UserHash(user string) []byte {
	sum := sha256.Sum256([]byte("user\x00" + user))
	return sum[:16]
}

// BindHash is what a requestState keeps of its request: the tool's name as
// the client called it and its arguments, canonical (keys in order, no
// spaces, numbers as sent), so that a client that encodes them again on
// the retry still matches.
func BindHash(tool string, args map[string]any) []byte {
	b, _ := json.Marshal(args) // decoded from JSON: encodes again
	h := sha256.New()
	h.Write([]byte(tool))
	h.Write([]byte{0})
	h.Write(b)
	return h.Sum(nil)[:16]
}

// NewKey returns a random key for a process whose requestStates no other
// replica opens.
func NewKey() []byte {
	k := make([]byte, KeySize)
	_, _ = rand.Read(k) // crypto/rand.Read never fails
	return k
}

// A Sealer seals and opens requestStates with its Key.
type Sealer struct {
	// Key is the HMAC-SHA256 key, shared by the replicas that open each
	// other's requestStates.
	Key []byte
	// Wait is how long a call waits for its client's answers: the error
	// of an expired requestState says it.
	Wait time.Duration
}

// Seal returns st as a requestState.
func (s Sealer) Seal(st State) string {
	payload, _ := json.Marshal(st) // plain fields: cannot fail
	p := base64.RawURLEncoding.EncodeToString(payload)
	return p + "." + base64.RawURLEncoding.EncodeToString(s.mac(p))
}

func (s Sealer) mac(payload string) []byte {
	m := hmac.New(sha256.New, s.Key)
	m.Write([]byte(macLabel))
	m.Write([]byte(payload))
	return m.Sum(nil)
}

// Open opens requestState text, checking its seal and its expiry. Its
// errors match ErrRefused and say which check failed.
func (s Sealer) Open(text string, now time.Time) (State, error) {
	var st State
	p, mac, ok := strings.Cut(text, ".")
	if !ok || len(text) > MaxLen {
		return st, refused("it is not one this service issued")
	}
	got, err := base64.RawURLEncoding.DecodeString(mac)
	if err != nil || !hmac.Equal(got, s.mac(p)) {
		return st, refused("it is not one this service issued, or it was altered")
	}
	payload, err := base64.RawURLEncoding.DecodeString(p)
	if err != nil || json.Unmarshal(payload, &st) != nil {
		return st, refused("it is not one this service issued")
	}
	if now.Unix() > st.Expires {
		return st, refused(fmt.Sprintf("it expired (a call waits %v for its client's answers): call the tool again", s.Wait))
	}
	return st, nil
}

// OpenFor opens requestState text of a request of user (Open) and checks
// that it was issued to user, for the request bind hashes.
func (s Sealer) OpenFor(text, user string, bind []byte, now time.Time) (State, error) {
	st, err := s.Open(text, now)
	switch {
	case err != nil:
		return st, err
	case !bytes.Equal(st.User, UserHash(user)):
		return st, refused("it was issued to another user")
	case !bytes.Equal(st.Bind, bind):
		return st, refused("it was issued for another request: the retry must name the same tool with the same arguments")
	}
	return st, nil
}

// refused is a refused requestState's error.
func refused(why string) error {
	return fmt.Errorf("%w: %s", ErrRefused, why)
}
