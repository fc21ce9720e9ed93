package session

import (
	"github.com/elysia-go/elysia/mcpgateway/internal/ring"

	"context"
	"errors"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// Session is one live connection to the server: an initialized mcp-go client
// and, for stdio, the child process. It is shared by every concurrent call of
// its gateway; the gateway replaces it when it dies.
//
// A session's goroutines (the transport's readers, the stderr drain) belong
// to it: close ends them and waits, bounded by the gateway's CloseGrace.
type Session struct {
	client      *mcpclient.Client
	transport   string   // what is actually in use: stdio, http or sse
	protocol    string   // negotiated protocol version
	listChanged bool     // the server announces notifications/tools/list_changed
	offers      []string // which of tools, resources and prompts the server has
	// listen is what a 2026-07-28 session asks subscriptions/listen for:
	// the list changes the server announces.
	listen mcp.SubscriptionFilter
	// relisten (buffer of one) asks the listen loop of a 2026-07-28
	// session to open its stream again; listenStop ends the stream open
	// now, nil when none is (listen.go).
	relisten   chan struct{}
	listenStop atomic.Pointer[context.CancelFunc]
	// resMu guards resources: the URIs a 2026-07-28 session's stream
	// carries subscriptions for (Subscribe). mcp-go's client keeps such a
	// list too, but its Listen replaces it with the filter it is given,
	// losing a URI added between the read of the filter and the call.
	resMu     sync.Mutex
	resources []string

	// callsMu guards calls: the tools/calls in flight, by progress token.
	callsMu sync.Mutex
	calls   map[string]*activeCall

	// cancel ends the session's ctx (derived from the gateway's lifetime), which
	// owns HTTP streams. The dial sets it and client with attach, after the
	// session is registered and close may already run.
	cancel context.CancelFunc
	// setup guards client and cancel while the dial attaches them, and
	// closing, set once close has begun: attach then refuses them, and a
	// later close waits for closed.
	setup   sync.Mutex
	closing bool
	// abort, httpClient and proc are set before the session is
	// registered, and never change.
	abort      context.CancelFunc // ends every request of httpClient; nil for stdio
	httpClient *http.Client       // nil for stdio
	proc       *process           // nil for http and sse
	orders     fieldOrders        // the field order of the forms the server sent
	urls       urlElicitations    // url-mode questions awaiting their completion

	// dead is closed once the session is known to be unusable.
	dead     chan struct{}
	deadOnce sync.Once
	deadErr  error // written before dead is closed

	// closed is closed once close has ended the session.
	closed chan struct{}

	// getAnswered is closed once the standalone GET of httpClient has its
	// answer (the stream opened, refused or failed): see awaitGetStream.
	getAnswered     chan struct{}
	getAnsweredOnce sync.Once
}

// newSession returns a session over transport, not registered yet (see
// conn.register).
func newSession(transport string) *Session {
	return &Session{transport: transport, dead: make(chan struct{}), closed: make(chan struct{}), relisten: make(chan struct{}, 1),
		getAnswered: make(chan struct{})}
}

// markGetAnswered records that the standalone GET of the session's HTTP
// client has its answer.
func (s *Session) markGetAnswered() { s.getAnsweredOnce.Do(func() { close(s.getAnswered) }) }

// attach sets the session's client and the cancel of its ctx. Once close
// has begun it sets nothing and reports false: the caller then closes
// client and cancels itself, since close has passed them by.
func (s *Session) attach(client *mcpclient.Client, cancel context.CancelFunc) bool {
	s.setup.Lock()
	defer s.setup.Unlock()
	if s.closing {
		return false
	}
	s.client, s.cancel = client, cancel
	return true
}

// MarkDead records why the session is unusable; only the first reason is kept.
func (s *Session) MarkDead(err error) {
	s.deadOnce.Do(func() {
		s.deadErr = err
		close(s.dead)
	})
}

func (s *Session) isDead() bool {
	select {
	case <-s.dead:
		return true
	default:
		return false
	}
}

// pid returns the stdio child's pid, or 0.
func (s *Session) pid() int {
	if s == nil || s.proc == nil {
		return 0
	}
	return s.proc.pid
}

// close ends the session: for stdio, stdin is closed, the process group gets
// SIGTERM after grace/2 and SIGKILL after grace, and the child is reaped. It
// is idempotent, safe to call concurrently and bounded: the first call
// closes, and later ones wait on closed for it to finish. (Not a sync.Once:
// a goroutine blocked on a mutex is one that testing/synctest cannot tell
// is waiting, so the fake clock the first close waits on would stop.)
func (s *Session) close(grace time.Duration) {
	s.MarkDead(ErrClosed)
	s.setup.Lock()
	first := !s.closing
	s.closing = true
	client, cancel := s.client, s.cancel
	s.setup.Unlock()
	if !first {
		<-s.closed
		return
	}
	done := make(chan struct{})
	// The client's Close closes a stdio child's stdin; done waits for
	// the child to exit then (process.stop hurries it on).
	go func() {
		defer close(done)
		if client != nil {
			_ = client.Close()
		}
		if s.proc != nil {
			<-s.proc.waited
		}
	}()
	if s.proc != nil {
		s.proc.stop(done, grace)
	} else {
		timer := time.NewTimer(grace)
		select {
		case <-done:
		case <-timer.C:
		}
		timer.Stop()
	}
	if cancel != nil {
		cancel()
	}
	if s.abort != nil {
		s.abort()
	}
	<-done
	if s.httpClient != nil {
		s.httpClient.CloseIdleConnections()
	}
	close(s.closed)
}

// process is a stdio child started by the gateway. Its stderr goes to a pipe
// the gateway reads, not to mcp-go: the end of that stream tells the gateway
// the child is gone (mcp-go gives no hook for it), and its last lines go into
// error messages.
type process struct {
	pid int
	// stdin and stdout are the gateway's ends of the child's stdin and
	// stdout, which mcp-go's transport writes and reads.
	stdin   *os.File
	stdout  *os.File
	stderrR *os.File
	stderrW *os.File
	ring    *ring.Stderr
	// exited is closed when the child's stderr reaches EOF: the child and
	// everything it started have exited or closed it.
	exited chan struct{}
	// waited is closed once the child is reaped.
	waited chan struct{}
}

// startDrain starts reading stderr; called once the child has started, after
// the parent's copy of the write end is closed. wg owns the goroutine.
func (p *process) startDrain(wg *sync.WaitGroup) {
	_ = p.stderrW.Close()
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(p.exited)
		p.ring.Drain(p.stderrR)
	}()
}

// stop waits for the client's Close and the child's exit (done), signalling
// the process group on the way, then closes the gateway's ends of the pipes,
// which ends the transport's reader and the stderr drain.
func (p *process) stop(done <-chan struct{}, grace time.Duration) {
	timer := time.NewTimer(grace / 2)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		signalGroup(p.pid, syscall.SIGTERM)
		timer.Reset(grace - grace/2)
		select {
		case <-done:
		case <-timer.C:
			signalGroup(p.pid, syscall.SIGKILL)
			<-done
		}
	}
	// Whatever the child started in its group goes too.
	signalGroup(p.pid, syscall.SIGKILL)
	// Let the drain read what the child wrote before it died (the lines
	// an error message quotes): with the group gone, EOF is immediate,
	// unless something outside the group holds the pipe open.
	eof := time.NewTimer(stderrEOFWait)
	defer eof.Stop()
	select {
	case <-p.exited:
	case <-eof.C:
	}
	_ = p.stderrR.Close()
	_ = p.stdout.Close()
	_ = p.stdin.Close()
}

// stderrEOFWait bounds how long stop waits for a dead child's stderr to
// reach EOF before it closes the pipe.
const stderrEOFWait = 200 * time.Millisecond

// Cause returns err, or, when s died of a message over max_message_size,
// that: mcp-go then only reports its transport closed.
func (s *Session) Cause(err error) error {
	if s.isDead() && errors.Is(s.deadErr, ErrMessageTooLarge) {
		return s.deadErr
	}
	return err
}

// IsSessionGone reports whether err means the session can no longer be used:
// the stdio child exited, or the HTTP server forgot the session.
func IsSessionGone(err error) bool {
	return errors.Is(err, mcptransport.ErrTransportClosed) ||
		errors.Is(err, mcptransport.ErrSessionTerminated) ||
		errors.Is(err, os.ErrClosed) ||
		errors.Is(err, syscall.EPIPE)
}

// clientInfo is what the gateway says it is in the handshake.
var clientInfo = mcp.Implementation{Name: "elysia-go", Version: "0.1.0"}
