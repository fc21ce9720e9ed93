package session

import (
	"github.com/elysia-go/elysia/mcpgateway/internal/ring"

	"errors"
	"os"
)

// stdioPipes are the three pipes of a stdio child: the child's ends
// (stdinR, stdoutW, stderrW) go to exec.Cmd and are closed in the parent
// once it started; the gateway keeps the others.
type stdioPipes struct {
	stdinR, stdinW   *os.File
	stdoutR, stdoutW *os.File
	stderrR, stderrW *os.File
}

// newStdioPipes opens the three pipes, or none.
func newStdioPipes() (*stdioPipes, error) {
	var p stdioPipes
	var errs [3]error
	p.stdinR, p.stdinW, errs[0] = os.Pipe()
	p.stdoutR, p.stdoutW, errs[1] = os.Pipe()
	p.stderrR, p.stderrW, errs[2] = os.Pipe()
	if err := errors.Join(errs[:]...); err != nil {
		p.closeAll()
		return nil, err
	}
	return &p, nil
}

// closeAll closes every end that was opened.
func (p *stdioPipes) closeAll() {
	for _, f := range []*os.File{p.stdinR, p.stdinW, p.stdoutR, p.stdoutW, p.stderrR, p.stderrW} {
		if f != nil {
			_ = f.Close()
		}
	}
}

// process closes the child's ends, which the started child now holds, and
// returns the gateway's side of child pid. stderrW stays open until
// startDrain.
func (p *stdioPipes) process(pid int, mask func(string) string) *process {
	_ = p.stdinR.Close()
	_ = p.stdoutW.Close()
	return &process{pid: pid, stdin: p.stdinW, stdout: p.stdoutR, stderrR: p.stderrR, stderrW: p.stderrW,
		ring: ring.NewStderr(mask), exited: make(chan struct{}), waited: make(chan struct{})}
}
