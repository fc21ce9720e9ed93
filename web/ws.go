package web

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"

	"github.com/coder/websocket"
	"github.com/gin-gonic/gin"
)

// acceptWS completes the WebSocket handshake of c, echoing the API key
// subprotocol when the client sent one. When the handshake fails it has
// answered (a refusal with the API's JSON error body) and logged, and it
// returns false; otherwise the caller owns the conn and must close it.
func (s *Server) acceptWS(c *gin.Context) (*websocket.Conn, bool) {
	// browserGuard has checked Origin (same origin or allowed) for every
	// upgrade request, with the same rules as the other routes; the
	// library's own check, which knows only host patterns, would disagree.
	opts := &websocket.AcceptOptions{InsecureSkipVerify: true}
	if _, proto := wsProtocolKey(c.Request); proto != "" {
		opts.Subprotocols = []string{proto}
	}
	hw := &handshakeWriter{ResponseWriter: c.Writer}
	conn, err := websocket.Accept(hw, c.Request, opts)
	if err == nil {
		return conn, true
	}
	if hw.status == 0 {
		s.logger.WarnContext(c.Request.Context(), "websocket handshake failed", slog.Any(logKeyErr, err))
		return nil, false
	}
	if hw.status < 500 { // failStatus logs the others
		s.logger.WarnContext(c.Request.Context(), "websocket handshake refused", slog.Int(logKeyStatus, hw.status), slog.Any(logKeyErr, err))
	}
	c.Writer.Header().Del("Content-Type") // Accept's text/plain
	s.failStatus(c, hw.status, errors.New(strings.TrimSpace(hw.body.String())), nil)
	return nil, false
}

// handshakeWriter is the response writer websocket.Accept gets. When
// Accept refuses a handshake (no Upgrade header, a bad version, a foreign
// Origin) it holds back the status and the plain-text message Accept
// writes, so that acceptWS answers with the API's JSON error body instead.
// A handshake that succeeds passes through untouched, Hijack included.
type handshakeWriter struct {
	gin.ResponseWriter
	status int // the refusal's status, 0 while there is none
	body   bytes.Buffer
}

func (w *handshakeWriter) WriteHeader(code int) {
	if code >= 400 {
		w.status = code
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *handshakeWriter) Write(b []byte) (int, error) {
	if w.status != 0 {
		return w.body.Write(b)
	}
	return w.ResponseWriter.Write(b)
}

func (w *handshakeWriter) WriteString(s string) (int, error) { return w.Write([]byte(s)) }
