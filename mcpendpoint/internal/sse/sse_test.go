package sse

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

func TestNext(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		ok       bool
		want     Event
		raw      string // "" for all of in
	}{
		{"LF", "event: message\nid: s-1\ndata: {}\n\n", true, Event{Name: "message", ID: "s-1", Data: []byte("{}")}, ""},
		{"CRLF", "event: message\r\nid: s-1\r\ndata: {}\r\n\r\n", true, Event{Name: "message", ID: "s-1", Data: []byte("{}")}, ""},
		{"CR", "event: message\rid: s-1\rdata: {}\r\r", true, Event{Name: "message", ID: "s-1", Data: []byte("{}")}, ""},
		{"mixed", "data: a\r\ndata: b\rdata: c\n\r\n", true, Event{Data: []byte("a\nb\nc")}, ""},
		{"one space dropped", "data:a\ndata:  b\nid:x\nevent:  e\n\n", true, Event{Name: " e", ID: "x", Data: []byte("a\n b")}, ""},
		{"comments", ": hello\ndata: x\n:data: y\n\n", true, Event{Data: []byte("x")}, ""},
		{"no colon", "data\ndata\n\n", true, Event{Data: []byte("\n")}, ""},
		{"empty data", "data: \n\n", true, Event{}, ""},
		{"unknown field", "foo: bar\ndata: x\n\n", true, Event{Data: []byte("x")}, ""},
		{"id with NUL", "id: a\x00b\ndata: x\n\n", true, Event{Data: []byte("x")}, ""},
		{"last id wins", "id: a\nid: b\ndata: x\n\n", true, Event{ID: "b", Data: []byte("x")}, ""},
		{"retry", "id: s-0\nretry: 500\ndata: \n\n", true, Event{ID: "s-0", Retry: 500 * time.Millisecond}, ""},
		{"retry not digits", "retry: 5x\nretry: +5\nretry: -5\nretry:\nretry: 99999999999999999999\nretry: 99999999999999\ndata: x\n\n", true, Event{Data: []byte("x")}, ""},
		{"blank line alone", "\ndata: x\n\n", true, Event{}, "\n"},
		{"comment alone", ": ping\n\ndata: x\n\n", true, Event{}, ": ping\n\n"},
		{"two events", "data: a\n\ndata: b\n\n", true, Event{Data: []byte("a")}, "data: a\n\n"},
		{"CRLF then more", "data: a\r\n\r\ndata: b", true, Event{Data: []byte("a")}, "data: a\r\n\r\n"},
		{"CR at the end", "data: a\r\r", true, Event{Data: []byte("a")}, ""},
		{"empty", "", false, Event{}, ""},
		{"no blank line", "data: a\n", false, Event{}, ""},
		{"no line end", "data: a", false, Event{}, ""},
		{"CR then LF", "data: a\r\n", false, Event{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev, raw, rest, ok := Next([]byte(tc.in))
			if ok != tc.ok || !equal(ev, tc.want) {
				t.Fatalf("Next(%q) = %+v, %t; want %+v, %t", tc.in, ev, ok, tc.want, tc.ok)
			}
			wantRaw := tc.raw
			if wantRaw == "" && ok {
				wantRaw = tc.in
			}
			if string(raw) != wantRaw || string(raw)+string(rest) != tc.in {
				t.Errorf("Next(%q): raw %q rest %q; want raw %q", tc.in, raw, rest, wantRaw)
			}
		})
	}
}

// stream is events in every line ending style, a comment, a stray blank
// line and a tail that no blank line ends.
const stream = "event: message\nid: a-1\ndata: {\"a\":1}\n\n" +
	": keep-alive\r\n\r\n" +
	"id: a-2\r\nretry: 250\r\ndata: line one\r\ndata: line two\r\n\r\n" +
	"\n" +
	"data: cr\rdata: only\r\r" +
	"event: end\ndata: last\n\n" +
	"data: unfinished\n"

// events returns the events of s read whole, but those with no field.
func events(t *testing.T, s string) []Event {
	t.Helper()
	var out []Event
	for buf := []byte(s); ; {
		ev, _, rest, ok := Next(buf)
		if !ok {
			return out
		}
		if !equal(ev, Event{}) {
			out = append(out, ev)
		}
		buf = rest
	}
}

// TestNextSplit: events taken out of a growing buffer as writes of any
// size come are those of the stream read whole, and their raw bytes are
// the stream's.
func TestNextSplit(t *testing.T) {
	want := events(t, stream)
	if len(want) != 4 {
		t.Fatalf("the stream read whole: %d events, want 4", len(want))
	}
	for size := 1; size <= len(stream); size++ {
		var got []Event
		var raws, buf []byte
		for in := stream; in != ""; {
			n := min(size, len(in))
			buf = append(buf, in[:n]...)
			in = in[n:]
			for {
				ev, raw, rest, ok := Next(buf)
				if !ok {
					break
				}
				if !equal(ev, Event{}) {
					got = append(got, ev)
				}
				raws = append(raws, raw...)
				buf = rest
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("writes of %d bytes: %+v, want %+v", size, got, want)
		}
		if string(raws)+string(buf) != stream {
			t.Fatalf("writes of %d bytes: raw %q and rest %q, not the stream", size, raws, buf)
		}
	}
}

// TestReader: a Reader reads a stream's events, however its reads come,
// drops the unfinished tail, and refuses an event past its limit.
func TestReader(t *testing.T) {
	for _, r := range []io.Reader{strings.NewReader(stream), iotest.OneByteReader(strings.NewReader(stream)), iotest.DataErrReader(strings.NewReader(stream))} {
		var got []Event
		rd := NewReader(r, 1024)
		for {
			ev, err := rd.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, ev)
		}
		// One stray blank line is the stream's; the \n of a \r\n that
		// ends an event is not.
		if want := events(t, stream); len(got) != len(want)+2 || !reflect.DeepEqual(slicesDelete(got, Event{}), want) {
			t.Errorf("read %+v, want %+v and 2 with no field", got, want)
		}
	}

	rd := NewReader(strings.NewReader("data: short\n\ndata: "+strings.Repeat("x", 100)+"\n\n"), 64)
	if ev, err := rd.Next(); err != nil || string(ev.Data) != "short" {
		t.Fatalf("the short event: %+v, %v", ev, err)
	}
	if _, err := rd.Next(); !errors.Is(err, ErrTooLong) {
		t.Fatalf("an event past the limit: %v, want ErrTooLong", err)
	}
	if _, err := NewReader(strings.NewReader("data: "+strings.Repeat("x", 100)), 64).Next(); !errors.Is(err, ErrTooLong) {
		t.Fatalf("an unfinished event past the limit: %v, want ErrTooLong", err)
	}
}

func TestAppend(t *testing.T) {
	for _, tc := range []struct {
		ev   Event
		want string
	}{
		{Event{Name: "message", ID: "s-3", Data: []byte(`{"a":1}`)}, "event: message\nid: s-3\ndata: {\"a\":1}\n\n"},
		{Event{ID: "s-0", Retry: 500 * time.Millisecond}, "id: s-0\nretry: 500\ndata: \n\n"},
		{Event{Data: []byte("a\nb\r\nc\rd\n")}, "data: a\ndata: b\ndata: c\ndata: d\ndata: \n\n"},
		{Event{Name: "x\ny", ID: "1\r2", Data: []byte(" lead")}, "event: x\nid: 1\ndata:  lead\n\n"},
	} {
		if got := string(Append([]byte("prefix "), tc.ev)); got != "prefix "+tc.want {
			t.Errorf("Append(%+v) = %q, want %q", tc.ev, got, "prefix "+tc.want)
		}
		var b bytes.Buffer
		if err := Write(&b, tc.ev); err != nil || b.String() != tc.want {
			t.Errorf("Write(%+v) = %q, %v; want %q", tc.ev, b.String(), err, tc.want)
		}
	}
}

// FuzzNext: Next never panics, and its raw and rest are what it was
// given; an event Append writes is read back as it was, its data's line
// breaks made \n.
func FuzzNext(f *testing.F) {
	f.Add([]byte(stream), "message", "s-1", []byte(`{"a":1}`), uint32(0))
	f.Add([]byte("data: a\r\r\n"), "", "s-0", []byte(""), uint32(500))
	f.Add([]byte(":\n\n"), " x", " y", []byte("a\r\nb\rc\n"), uint32(1))
	f.Fuzz(func(t *testing.T, buf []byte, name, id string, data []byte, retry uint32) {
		for in := buf; ; {
			ev, raw, rest, ok := Next(in)
			if !ok {
				if !bytes.Equal(rest, in) {
					t.Fatalf("Next(%q): no event, rest %q", in, rest)
				}
				break
			}
			if len(raw) == 0 || string(raw)+string(rest) != string(in) {
				t.Fatalf("Next(%q): raw %q rest %q", in, raw, rest)
			}
			if again, _, r, ok := Next(raw); !ok || len(r) != 0 || !equal(again, ev) {
				t.Fatalf("Next(%q) = %+v, but Next of its raw %q = %+v, %t", in, ev, raw, again, ok)
			}
			in = rest
		}

		want := Event{Name: name, ID: id, Data: data, Retry: time.Duration(retry) * time.Millisecond}
		if strings.ContainsAny(name, "\r\n") || strings.ContainsAny(id, "\r\n\x00") {
			return // written cut, or read as no id
		}
		out := Append(nil, want)
		got, _, rest, ok := Next(out)
		want.Data = bytes.ReplaceAll(bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n")), []byte("\r"), []byte("\n"))
		if !ok || len(rest) != 0 || !equal(got, want) {
			t.Fatalf("Append(%+v) = %q, read back as %+v, %t, rest %q", want, out, got, ok, rest)
		}
	})
}

// equal reports whether a and b are the same event, nil and empty data
// alike.
func equal(a, b Event) bool {
	return a.Name == b.Name && a.ID == b.ID && bytes.Equal(a.Data, b.Data) && a.Retry == b.Retry
}

// slicesDelete returns evs without those equal to drop.
func slicesDelete(evs []Event, drop Event) []Event {
	var out []Event
	for _, ev := range evs {
		if !equal(ev, drop) {
			out = append(out, ev)
		}
	}
	return out
}
