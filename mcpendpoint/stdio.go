package mcpendpoint

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/mcpendpoint/internal/jsonrpc"
)

// lineWriter serialises whole messages to a stdio client: mcp-go's stdio
// server writes each message with one Write, and so does the fast path.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// writeParts writes the parts of one message, with no other message
// between them.
func (l *lineWriter) writeParts(parts [][]byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range parts {
		if _, err := l.w.Write(p); err != nil {
			return err
		}
	}
	return nil
}

// splitStdio reads the stdio client's lines from in: a plain tools/list is
// answered on out from the encoded catalog (fastList), a request naming a
// version the endpoint does not serve is refused (refuseUnserved), every
// other line goes on to mcp-go through pw. It ends when in ends (closing
// pw, so that mcp-go sees the end) or when nobody reads pw any more.
func (e *Endpoint) splitStdio(ctx context.Context, user string, in io.Reader, pw *io.PipeWriter, out *lineWriter) {
	br := bufio.NewReaderSize(in, 2*maxListRequestBytes)
	long := false // inside a line longer than the buffer: it goes on as it is
	for {
		line, err := br.ReadSlice('\n')
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			long = true
		case err == nil && !long:
			m, ok := jsonrpc.Decode(line)
			if !ok {
				break // mcp-go answers what it cannot parse
			}
			if answer, ok := refuseUnserved(m); ok {
				if answer != nil {
					if werr := out.writeParts([][]byte{answer}); werr != nil {
						pw.CloseWithError(werr)
						return
					}
				}
				continue
			}
			if parts, ok := e.fastList(ctx, user, m, anyVersion); ok {
				if werr := out.writeParts(parts); werr != nil {
					pw.CloseWithError(werr)
					return
				}
				continue
			}
		default:
			long = false
		}
		if len(line) > 0 {
			if _, werr := pw.Write(line); werr != nil {
				return // mcp-go has stopped reading
			}
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			pw.CloseWithError(err) // io.EOF: mcp-go ends as the client did
			return
		}
	}
}

// refuseUnserved keeps a stdio client on the protocol versions the
// endpoint fully serves there (servedVersions): mcp-go's stdio server
// would take any version it knows, even one whose server-initiated
// requests the endpoint would then not make. A request naming in its
// _meta a version that is not served is answered with the
// specification's -32022, listing the versions served. It reports whether
// m was one, with the answer to write (nil for a notification, which is
// dropped).
func refuseUnserved(m *jsonrpc.Message) (answer []byte, refused bool) {
	if m.Method == "" {
		return nil, false
	}
	version := m.Meta().ProtocolVersion
	if version == "" || slices.Contains(servedVersions, version) {
		return nil, false
	}
	if !m.HasID() {
		return nil, true // a notification: nothing to answer
	}
	b := jsonrpc.ErrorResponse(m.ID, mcp.UNSUPPORTED_PROTOCOL_VERSION, fmt.Sprintf("unsupported protocol version %q", version),
		map[string]any{"supported": servedVersions, "requested": version})
	return append(b, '\n'), true
}
