package session

import (
	"bytes"
	"fmt"
	"io"
)

// tooLargeError is the death of a session whose server sent a message over
// the limit; it matches ErrMessageTooLarge.
type tooLargeError struct{ limit int }

func (e *tooLargeError) Error() string {
	return fmt.Sprintf("sent a message over the %s limit (max_message_size); the session was closed", byteSize(e.limit))
}

// Is reports whether target is ErrMessageTooLarge.
func (e *tooLargeError) Is(target error) bool { return target == ErrMessageTooLarge }

// byteSize writes n as "4 MiB", "64 KiB" or "1000 bytes".
func byteSize(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// lineLimit sits between a stdio child's stdout and mcp-go's transport,
// which reads a line whole however long it is (bufio.Reader.ReadString): it
// passes lines of up to max bytes and their newline, and fails the read
// at the first byte past max, so the transport never holds more than about
// max bytes of one message. over is called once, with the error, before the
// read fails, so that the session is marked dead with that cause before
// mcp-go reports the transport closed. It is used by one reader goroutine.
type lineLimit struct {
	r    io.Reader
	max  int
	over func(error)

	run int   // bytes of the current line read so far
	err error // sticky once the limit is passed
}

func (l *lineLimit) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	// Never read more than may still pass, plus one byte to see whether
	// the line goes on.
	if room := l.max - l.run + 1; len(p) > room {
		p = p[:room]
	}
	n, err := l.r.Read(p)
	for i := 0; i < n; {
		nl := bytes.IndexByte(p[i:n], '\n')
		if nl < 0 {
			l.run += n - i
			if l.run > l.max {
				n -= l.run - l.max
				l.err = &tooLargeError{limit: l.max}
				if l.over != nil {
					l.over(l.err)
				}
				return n, l.err
			}
			break
		}
		if l.run+nl > l.max {
			n = i + l.max - l.run
			l.err = &tooLargeError{limit: l.max}
			if l.over != nil {
				l.over(l.err)
			}
			return n, l.err
		}
		l.run = 0
		i += nl + 1
	}
	return n, err
}
