package web

import (
	"net"
	"net/http"

	"github.com/gin-gonic/gin"
)

// MCPEndpoint serves the aggregate MCP endpoint (DESIGN.md, "The aggregate
// MCP endpoint"): /mcp (Streamable HTTP), /sse and /message (legacy SSE).
// web authenticates the request and says whose it is; the endpoint owns the
// MCP sessions. ServeMCP is called on the request's goroutine, may stream
// until the request's ctx ends, and is safe for concurrent use.
type MCPEndpoint interface {
	ServeMCP(w http.ResponseWriter, r *http.Request, user string)
}

// mcpUserHeader names the user on a keyless service (or with an admin key).
const mcpUserHeader = "X-Elysia-User"

// mcpRoutes mounts the MCP endpoint when there is one.
func (s *Server) mcpRoutes(e *gin.Engine) {
	if s.mcp == nil {
		return
	}
	e.POST("/mcp", s.serveMCP)
	e.GET("/mcp", s.serveMCP)
	e.DELETE("/mcp", s.serveMCP)
	e.GET("/sse", s.serveMCP)
	e.POST("/message", s.serveMCP)
}

// serveMCP checks who is asking, then hands the request to the endpoint.
// With keys, the key's user is the session's user (an admin key may name
// one with X-Elysia-User). Without keys only loopback clients are served,
// as the user X-Elysia-User names or the default one. The Host and Origin
// checks of every route have already run (browserGuard).
func (s *Server) serveMCP(c *gin.Context) {
	user, ok := s.authenticate(c)
	if !ok {
		c.Header("WWW-Authenticate", `Bearer realm="elysia"`)
		s.fail(c, ErrUnauthorized, nil)
		return
	}
	if !s.authEnabled() && !loopbackPeer(c.Request.RemoteAddr) {
		s.fail(c, &requestError{http.StatusForbidden, "without API keys the MCP endpoint serves loopback clients only; set ELYSIA_API_KEYS"}, nil)
		return
	}
	if user == AdminUser {
		user = s.mcpUser
		if h := c.GetHeader(mcpUserHeader); h != "" {
			if err := checkID(mcpUserHeader, h); err != nil {
				s.fail(c, err, nil)
				return
			}
			user = h
		}
	}
	setPrincipal(c, user)
	s.mcp.ServeMCP(c.Writer, c.Request, user)
}

// loopbackPeer reports whether the TCP peer addr is a loopback address.
func loopbackPeer(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
