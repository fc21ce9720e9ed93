package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	mcpserver "github.com/mark3labs/mcp-go/server"
)

// serveStdio serves srv on stdin and stdout until stdin closes (a clean
// exit) or ctx ends.
func serveStdio(ctx context.Context, logger *slog.Logger, srv *mcpserver.MCPServer, stdin io.Reader, stdout io.Writer) error {
	s := mcpserver.NewStdioServer(srv)
	s.SetErrorLogger(slog.NewLogLogger(logger.Handler(), slog.LevelError))
	logger.Info("serving MCP on stdio")
	err := s.Listen(ctx, stdin, stdout)
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("serve stdio: %w", err)
	}
	logger.Info("stdio closed, shutting down")
	return nil
}

// serveHTTP serves srv on addr, as streamable HTTP at /mcp or, with sse, as
// the HTTP+SSE transport at /sse and /message, until ctx ends. Then it closes
// the sessions and waits up to wait for in-flight requests before cutting
// the rest off.
func serveHTTP(ctx context.Context, logger *slog.Logger, srv *mcpserver.MCPServer, addr string, sse bool, wait time.Duration) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	hs := &http.Server{
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	var shutdown func(context.Context) error
	var url string
	if sse {
		s := mcpserver.NewSSEServer(srv,
			mcpserver.WithHTTPServer(hs),
			mcpserver.WithKeepAlive(true),
			mcpserver.WithKeepAliveInterval(15*time.Second),
		)
		hs.Handler = s
		shutdown = s.Shutdown
		url = "http://" + ln.Addr().String() + "/sse"
	} else {
		s := mcpserver.NewStreamableHTTPServer(srv,
			mcpserver.WithStreamableHTTPServer(hs),
			mcpserver.WithHeartbeatInterval(15*time.Second),
		)
		mux := http.NewServeMux()
		mux.Handle("/mcp", s)
		hs.Handler = mux
		shutdown = s.Shutdown
		url = "http://" + ln.Addr().String() + "/mcp"
	}

	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	logger.Info("serving MCP over HTTP", logKeyTransport, transportName(sse), "url", url)

	select {
	case err := <-served:
		return fmt.Errorf("serve %s: %w", url, err)
	case <-ctx.Done():
	}
	logger.Info("shutting down", logKeyTransport, transportName(sse))
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), wait)
	defer cancel()
	if err := shutdown(sctx); err != nil {
		logger.Warn("graceful shutdown incomplete, closing connections", logKeyErr, err)
		_ = hs.Close()
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve %s: %w", url, err)
	}
	return nil
}

// transportName names the HTTP transport for the log.
func transportName(sse bool) string {
	if sse {
		return "sse"
	}
	return "streamable-http"
}
