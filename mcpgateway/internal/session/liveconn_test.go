package session

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/elysia-go/elysia/internal/testenv"
)

// tcpPair is a liveConn dialled to a listener on 127.0.0.1 and the
// server's end of it.
func tcpPair(t *testing.T) (client net.Conn, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }() // the pair is made: no more to accept
	d := &net.Dialer{Timeout: 5 * time.Second}
	client, err = liveDial(d.DialContext)(t.Context(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	if _, ok := client.(*liveConn); !ok {
		t.Fatalf("liveDial gave a %T, want a *liveConn", client)
	}
	if server, err = ln.Accept(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = server.Close() })
	for _, c := range []net.Conn{client, server} {
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	}
	return client, server
}

// exchange writes a request from client and an answer from server, and
// reads both.
func exchange(t *testing.T, client, server net.Conn) {
	t.Helper()
	buf := make([]byte, 4)
	if _, err := client.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(server, buf); err != nil {
		t.Fatal(err)
	}
	if _, err := server.Write([]byte("pong")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(client, buf); err != nil {
		t.Fatal(err)
	}
}

func TestLiveConnRefusesAClosedConnection(t *testing.T) {
	client, server := tcpPair(t)
	exchange(t, client, server)
	_ = server.Close()
	// The read returns once the server's end of stream has arrived.
	if n, err := client.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("read after the server closed = %d, %v; want 0, EOF", n, err)
	}
	// Unarmed (the middle of a request), the write goes out.
	if _, err := client.Write([]byte("body")); err != nil {
		t.Fatalf("unarmed write after the server closed = %v; want it written", err)
	}
	client.(*liveConn).armed.Store(true)
	if n, err := client.Write([]byte("next")); n != 0 || !errors.Is(err, errPeerClosed) {
		t.Fatalf("armed write after the server closed = %d, %v; want 0, errPeerClosed", n, err)
	}
}

func TestLiveConnWritesToAnOpenConnection(t *testing.T) {
	client, server := tcpPair(t)
	exchange(t, client, server)
	client.(*liveConn).armed.Store(true)
	exchange(t, client, server)
	// Bytes the server sent unasked do not say the connection is closed.
	if _, err := server.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	client.(*liveConn).armed.Store(true)
	if _, err := client.Write([]byte("last")); err != nil {
		t.Fatalf("armed write with bytes waiting = %v", err)
	}
}

// heldConn holds back from its reader whatever arrives once hold is set:
// net/http's read loop, late to run on a busy machine, has not seen the
// server's close when the next request takes the connection.
type heldConn struct {
	*net.TCPConn
	hold    *atomic.Bool
	arrived chan struct{} // closed once something arrived while held
	release chan struct{}
	once    sync.Once
}

func (c *heldConn) Read(p []byte) (int, error) {
	n, err := c.TCPConn.Read(p)
	if c.hold.Load() {
		c.once.Do(func() { close(c.arrived) })
		<-c.release
	}
	return n, err
}

// TestPostToAClosedKeptAliveConnectionIsNotSent: a server that went away
// after answering leaves its connection in the client's pool, closed. A
// POST that takes it before net/http's read loop has seen the close is
// refused before it is written, net/http sends it again on a new
// connection, and that dial's refusal proves it was never sent (NotSent);
// before, the POST was written into the closed connection and ended in
// EOF: a call that may have run. Over TLS the server's close_notify comes
// ahead of its end of stream.
func TestPostToAClosedKeptAliveConnectionIsNotSent(t *testing.T) {
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = w.Write([]byte("ok"))
	})
	for _, tc := range []struct {
		name  string
		start func(http.Handler) *httptest.Server
	}{{"http", httptest.NewServer}, {"https", httptest.NewTLSServer}} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "https" && runtime.GOOS != "linux" {
				t.Skip("only Linux tells a close behind a TLS close_notify (peerClosed)")
			}
			srv := tc.start(handler)
			defer srv.Close()
			release := make(chan struct{})
			defer close(release)
			var hold atomic.Bool
			dialled := make(chan *heldConn, 1)
			tr := &http.Transport{DialContext: liveDial(func(ctx context.Context, network, addr string) (net.Conn, error) {
				c, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				hc := &heldConn{TCPConn: c.(*net.TCPConn), hold: &hold, arrived: make(chan struct{}), release: release}
				select {
				case dialled <- hc:
				default:
				}
				return hc, nil
			})}
			if tc.name == "https" {
				tr.TLSClientConfig = srv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
			}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr}
			post := func() error {
				ctx, cancel := context.WithTimeout(httptrace.WithClientTrace(t.Context(), armOnReuse), 10*time.Second)
				defer cancel()
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, bytes.NewReader([]byte(`{"jsonrpc":"2.0"}`)))
				if err != nil {
					t.Fatal(err)
				}
				resp, err := client.Do(req)
				if err != nil {
					return err
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				return resp.Body.Close()
			}
			if err := post(); err != nil {
				t.Fatal(err)
			}
			first := <-dialled
			hold.Store(true)
			srv.Close() // closes the idle connection and the listener
			select {
			case <-first.arrived:
			case <-time.After(10 * time.Second):
				t.Fatal("the server's close did not reach the client")
			}
			testenv.WaitFor(t, 10*time.Second, "the server's end of stream", func() bool {
				sc, _ := first.SyscallConn()
				return peerClosed(sc)
			})
			err := post()
			if err == nil || !errors.Is(err, syscall.ECONNREFUSED) || !NotSent(err) {
				t.Fatalf("POST on the closed connection = %v; want a refused dial (never sent)", err)
			}
		})
	}
}
