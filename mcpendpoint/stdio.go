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
// answered on out from the encoded catalog (fastList), every other line
// goes on to mcp-go through pw. It ends when in ends (closing pw, so that
// mcp-go sees the end) or when nobody reads pw any more.
func (e *Endpoint) splitStdio(ctx context.Context, user string, in io.Reader, pw *io.PipeWriter, out *lineWriter) {
	br := bufio.NewReaderSize(in, 2*maxListRequestBytes)
	long := false // inside a line longer than the buffer: it goes on as it is
	for {
		line, err := br.ReadSlice('\n')
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			long = true
		case err == nil && !long:
			if answer, ok := refuseStateless(line); ok {
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

// refuseStateless keeps a stdio client on the protocol versions the
// endpoint fully serves there (protocolVersions). mcp-go's stdio server
// would accept 2026-07-28, whose server-initiated requests it then
// refuses: the upstreams' elicitation came back declined and their
// sampling failed. So server/discover, which only a 2026-07-28 client
// sends, is answered as a 2025-11-25 server answers an unknown method
// (-32601: the client falls back to initialize), and any other request
// that names a version in its _meta that is not served is answered with
// the specification's -32022, listing the versions served. It reports
// whether line was one of those, with the answer to write (nil for a
// notification, which is dropped).
func refuseStateless(line []byte) (answer []byte, refused bool) {
	if !bytes.Contains(line, []byte(`server/discover`)) && !bytes.Contains(line, []byte(mcp.MetaKeyProtocolVersion)) {
		return nil, false // the cheap test: a 2025-11-25 client sends neither
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
	var rpcErr map[string]any
	switch {
	case req.Method == string(mcp.MethodServerDiscover):
		rpcErr = map[string]any{"code": mcp.METHOD_NOT_FOUND, "message": "Method not found: this server speaks MCP " + protocolVersions[0] + " and older; initialize instead"}
	case version != "" && !slices.Contains(protocolVersions, version):
		rpcErr = map[string]any{"code": mcp.UNSUPPORTED_PROTOCOL_VERSION,
			"message": fmt.Sprintf("unsupported protocol version %q", version),
			"data":    map[string]any{"supported": protocolVersions, "requested": version}}
	default:
		return nil, false
	}
	if len(req.ID) == 0 || string(req.ID) == "null" {
		return nil, true // a notification: nothing to answer
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": rpcErr})
	return append(b, '\n'), true
}
