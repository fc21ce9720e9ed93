package session

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"unicode/utf8"
)

// stderrLines is how many of a stdio child's last stderr lines are kept for
// error messages.
const stderrLines = 50

// maxStderrLine bounds one kept line; longer lines are cut.
const maxStderrLine = 1024

// stderrRing keeps the last lines a stdio child wrote to stderr, masked
// and cut to maxStderrLine. It is safe for concurrent use.
type stderrRing struct {
	mask func(string) string
	ring[string]
}

func newStderrRing(mask func(string) string) *stderrRing {
	return &stderrRing{mask: mask, ring: ring[string]{size: stderrLines}}
}

func (r *stderrRing) add(line string) {
	// Mask before cutting: a secret straddling the cut would otherwise
	// survive in part.
	line = r.mask(strings.TrimRight(line, "\r\n"))
	if len(line) > maxStderrLine {
		cut := maxStderrLine
		for cut > 0 && !utf8.RuneStart(line[cut]) {
			cut--
		}
		line = line[:cut] + "..."
	}
	r.ring.add(line)
}

// tail formats the last few lines for an error message: "" when there are
// none, else "; stderr: a | b | c".
func (r *stderrRing) tail() string {
	lines := r.last(5)
	if len(lines) == 0 {
		return ""
	}
	return "; stderr: " + strings.Join(lines, " | ")
}

// drain reads src line by line into the ring until it ends or fails. A line
// longer than maxStderrLine is kept cut, and the rest of it is read and
// dropped without being held, so a child writing one endless line costs a
// fixed buffer. The caller owns src and closes it to stop drain early.
func (r *stderrRing) drain(src io.Reader) {
	br := bufio.NewReaderSize(src, maxStderrLine+1)
	for {
		chunk, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			r.add(string(chunk)) // cut to maxStderrLine by add
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
		} else if len(chunk) > 0 {
			r.add(string(chunk))
		}
		if err != nil {
			return
		}
	}
}
