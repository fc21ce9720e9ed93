package mcpendpoint

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
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
			if answer, ok := refuseUnserved(line); ok {
				if answer != nil {
					if werr := out.writeParts([][]byte{answer}); werr != nil {
						pw.CloseWithError(werr)
						return
					}
				}
				continue
			}
			if parts, ok := e.fastList(ctx, user, line, anyVersion); ok {
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
// line was one, with the answer to write (nil for a notification, which
// is dropped).
func refuseUnserved(line []byte) (answer []byte, refused bool) {
	if !bytes.Contains(line, []byte(mcp.MetaKeyProtocolVersion)) || bytes.Contains(line, []byte(`"`+mcp.ProtocolVersion20260728+`"`)) {
		return nil, false // the cheap test: a session's requests name none, and most others name 2026-07-28
	}
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Meta map[string]any `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(line, &req) != nil || req.Method == "" {
		return nil, false // mcp-go answers what it cannot parse
	}
	version, _ := req.Params.Meta[mcp.MetaKeyProtocolVersion].(string)
	if version == "" || slices.Contains(servedVersions, version) {
		return nil, false
	}
	if len(req.ID) == 0 || string(req.ID) == "null" {
		return nil, true // a notification: nothing to answer
	}
	rpcErr := map[string]any{"code": mcp.UNSUPPORTED_PROTOCOL_VERSION,
		"message": fmt.Sprintf("unsupported protocol version %q", version),
		"data":    map[string]any{"supported": servedVersions, "requested": version}}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": rpcErr})
	return append(b, '\n'), true
}
