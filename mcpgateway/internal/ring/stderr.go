package ring

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"unicode/utf8"
)

// StderrLines is how many of a stdio child's last stderr lines are kept for
// error messages.
const StderrLines = 50

// maxStderrLine bounds one kept line; longer lines are cut.
const maxStderrLine = 1024

// Stderr keeps the last StderrLines lines a stdio child wrote to stderr,
// masked and cut to maxStderrLine. It is safe for concurrent use.
type Stderr struct {
	mask  func(string) string
	lines Buffer[string]
}

// NewStderr returns an empty Stderr whose lines are masked with mask.
func NewStderr(mask func(string) string) *Stderr {
	return &Stderr{mask: mask, lines: Buffer[string]{size: StderrLines}}
}

// Add keeps line (its line ending dropped), masked, then cut.
func (r *Stderr) Add(line string) {
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
	r.lines.Add(line)
}

// Tail formats the last few lines for an error message: "" when there are
// none, else "; stderr: a | b | c".
func (r *Stderr) Tail() string {
	lines := r.lines.Last(5)
	if len(lines) == 0 {
		return ""
	}
	return "; stderr: " + strings.Join(lines, " | ")
}

// Drain reads src line by line into the ring until it ends or fails. A line
// longer than maxStderrLine is kept cut, and the rest of it is read and
// dropped without being held, so a child writing one endless line costs a
// fixed buffer. The caller owns src and closes it to stop drain early.
func (r *Stderr) Drain(src io.Reader) {
	br := bufio.NewReaderSize(src, maxStderrLine+1)
	for {
		chunk, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			r.Add(string(chunk)) // cut to maxStderrLine by Add
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
		} else if len(chunk) > 0 {
			r.Add(string(chunk))
		}
		if err != nil {
			return
		}
	}
}

// Last returns the kept lines, oldest first, in a slice of the caller's.
func (r *Stderr) Last() []string { return r.lines.Last(StderrLines) }
