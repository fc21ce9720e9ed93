// Package sse reads and writes event streams (text/event-stream) by the
// rules of the WHATWG HTML standard: lines end in \n, \r\n or \r; an
// event is the lines up to a blank one; a line is a field, "name: value"
// (one space after the colon is dropped), or, starting with a colon, a
// comment; the data of an event's data lines is joined by \n.
package sse

import (
	"bytes"
	"errors"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Event is one event of a stream.
type Event struct {
	Name  string        // the event field: the event's type ("" is "message")
	ID    string        // the id field: the last event id it sets
	Data  []byte        // the data lines, joined by \n
	Retry time.Duration // the retry field, in whole milliseconds: the reconnection time it sets
}

// Next takes the first event out of buf, what was read of a stream so far:
// ev is the event, raw its bytes up to and including the blank line that
// ends it, and rest what follows. ok is false while buf holds no complete
// event. Every block of lines that ends in a blank line is an event, one
// without fields too (a comment alone, or a stray blank line), so that an
// event passed on as raw changes nothing on the wire. A blank line whose \r
// ends buf ends the event: a \n that comes after it is a blank line of its
// own. ev.Data never shares memory with buf.
func Next(buf []byte) (ev Event, raw, rest []byte, ok bool) {
	var data []byte
	var dataLines int
	for i := 0; ; {
		n := bytes.IndexAny(buf[i:], "\r\n")
		if n < 0 {
			return Event{}, nil, buf, false
		}
		line := buf[i : i+n]
		i += n + 1
		if buf[i-1] == '\r' && i < len(buf) && buf[i] == '\n' {
			i++
		}
		if len(line) == 0 {
			ev.Data = data
			return ev, buf[:i], buf[i:], true
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			ev.Name = string(value)
		case "data":
			if dataLines++; dataLines > 1 {
				data = append(data, '\n')
			}
			data = append(data, value...)
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				ev.ID = string(value)
			}
		case "retry":
			ms, err := strconv.ParseUint(string(value), 10, 64) // digits alone
			if err == nil && ms <= math.MaxInt64/uint64(time.Millisecond) {
				ev.Retry = time.Duration(ms) * time.Millisecond
			}
		}
	}
}

// ErrTooLong is the error of a Reader whose stream holds an event longer
// than its limit.
var ErrTooLong = errors.New("sse: event too long")

// Reader reads the events of a stream.
type Reader struct {
	r   io.Reader
	max int
	buf []byte // read, not yet an event
	cr  bool   // the last event ended in \r: a \n next belongs to it
	err error
}

// NewReader returns a Reader of the stream r whose events, blank line
// included, are at most max bytes long.
func NewReader(r io.Reader, max int) *Reader {
	return &Reader{r: r, max: max}
}

// Next returns the stream's next event (see the package function Next
// for what an event is). At the stream's end, where an event not ended
// by a blank line is dropped, the error is io.EOF; past an event longer
// than the limit, ErrTooLong.
func (r *Reader) Next() (Event, error) {
	for {
		if r.cr && len(r.buf) > 0 {
			r.cr = false
			r.buf = bytes.TrimPrefix(r.buf, []byte("\n"))
		}
		ev, raw, rest, ok := Next(r.buf)
		switch {
		case ok && len(raw) <= r.max:
			r.buf, r.cr = rest, raw[len(raw)-1] == '\r'
			return ev, nil
		case ok || len(r.buf) > r.max:
			r.err = ErrTooLong
		}
		if r.err != nil {
			return Event{}, r.err
		}
		r.buf = slices.Grow(r.buf, max(4096, len(r.buf)))
		n, err := r.r.Read(r.buf[len(r.buf):cap(r.buf)])
		r.buf = r.buf[:len(r.buf)+n]
		if err != nil {
			r.err = err
		}
	}
}

// Append appends ev to dst as a stream carries it, and returns the
// extended buffer: its event, id and retry fields, when set, then a data
// line for each line of Data (one, empty, when Data is empty), then a
// blank line. A line break in Data, \n, \r\n or \r, is read back as \n.
// Name and ID end at their first line break.
func Append(dst []byte, ev Event) []byte {
	dst = appendField(dst, "event", ev.Name)
	dst = appendField(dst, "id", ev.ID)
	if ms := ev.Retry.Milliseconds(); ms > 0 {
		dst = append(dst, "retry: "...)
		dst = append(strconv.AppendInt(dst, ms, 10), '\n')
	}
	data := ev.Data
	for {
		n := bytes.IndexAny(data, "\r\n")
		if n < 0 {
			dst = append(append(append(dst, "data: "...), data...), '\n')
			return append(dst, '\n')
		}
		dst = append(append(append(dst, "data: "...), data[:n]...), '\n')
		if data[n] == '\r' && n+1 < len(data) && data[n+1] == '\n' {
			n++
		}
		data = data[n+1:]
	}
}

// appendField appends the field name with value, up to its first line
// break, unless value is empty.
func appendField(dst []byte, name, value string) []byte {
	if value == "" {
		return dst
	}
	if n := strings.IndexAny(value, "\r\n"); n >= 0 {
		value = value[:n]
	}
	dst = append(append(dst, name...), ": "...)
	return append(append(dst, value...), '\n')
}

// Write writes ev to w as Append lays it out.
func Write(w io.Writer, ev Event) error {
	_, err := w.Write(Append(nil, ev))
	return err
}
