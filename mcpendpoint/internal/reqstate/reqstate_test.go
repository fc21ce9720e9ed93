package reqstate

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestSealOpen(t *testing.T) {
	s := Sealer{Key: NewKey(), Wait: 2 * time.Minute}
	now := time.Now()
	bind := BindHash("up__two", map[string]any{"who": "me"})
	want := State{Call: "c1", Replica: "r1", Round: 2, Expires: now.Add(time.Minute).Unix(), User: UserHash("alice"), Bind: bind}
	text := s.Seal(want)
	if len(text) > MaxLen {
		t.Fatalf("sealed state is %d bytes, more than MaxLen", len(text))
	}
	for _, open := range []func() (State, error){
		func() (State, error) { return s.Open(text, now) },
		func() (State, error) { return s.OpenFor(text, "alice", bind, now) },
		func() (State, error) { return Sealer{Key: append([]byte(nil), s.Key...)}.Open(text, now) }, // another replica's
	} {
		got, err := open()
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("opened %+v, %v; want %+v", got, err, want)
		}
	}
}

func TestOpenRefused(t *testing.T) {
	s := Sealer{Key: NewKey(), Wait: 2 * time.Minute}
	now := time.Now()
	bind := BindHash("up__two", map[string]any{"who": "me"})
	st := State{Call: "c1", Replica: "r1", Round: 1, Expires: now.Add(time.Minute).Unix(), User: UserHash("alice"), Bind: bind}
	text := s.Seal(st)
	dot := strings.IndexByte(text, '.')
	expired := st
	expired.Expires = now.Add(-time.Minute).Unix()
	for _, tt := range []struct {
		name, text, user string
		bind             []byte
		want             string
	}{
		{"empty", "", "alice", bind, "not one this service issued"},
		{"unsigned", text[:dot], "alice", bind, "not one this service issued"},
		{"forged", text[:dot-2] + "xx" + text[dot:], "alice", bind, "not one this service issued, or it was altered"},
		{"another key's", Sealer{Key: NewKey()}.Seal(st), "alice", bind, "not one this service issued, or it was altered"},
		{"too long", text + strings.Repeat("A", MaxLen), "alice", bind, "not one this service issued"},
		{"expired", s.Seal(expired), "alice", bind, "it expired (a call waits 2m0s for its client's answers)"},
		{"another user's", text, "bob", bind, "another user"},
		{"another request's", text, "alice", BindHash("up__two", map[string]any{"who": "you"}), "another request"},
	} {
		_, err := s.OpenFor(tt.text, tt.user, tt.bind, now)
		if !errors.Is(err, ErrRefused) || !strings.HasPrefix(err.Error(), "requestState refused: ") || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v; want ErrRefused: %s", tt.name, err, tt.want)
		}
	}
}

// TestBindHashCanonical: arguments encoded again, their keys in another
// order and with spaces, bind as sent; other ones, or another tool, do
// not.
func TestBindHashCanonical(t *testing.T) {
	decode := func(s string) map[string]any {
		t.Helper()
		var m map[string]any
		d := json.NewDecoder(strings.NewReader(s))
		d.UseNumber()
		if err := d.Decode(&m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	a := BindHash("t", decode(`{"a":1,"b":[true,"x"]}`))
	if b := BindHash("t", decode(`{ "b" : [ true, "x" ], "a" : 1 }`)); string(a) != string(b) {
		t.Error("the same arguments, encoded again, bind differently")
	}
	if b := BindHash("t", decode(`{"a":2,"b":[true,"x"]}`)); string(a) == string(b) {
		t.Error("other arguments bind the same")
	}
	if b := BindHash("u", decode(`{"a":1,"b":[true,"x"]}`)); string(a) == string(b) {
		t.Error("another tool binds the same")
	}
	if string(UserHash("alice")) == string(UserHash("bob")) {
		t.Error("two users hash the same")
	}
}
