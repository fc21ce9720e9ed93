package mcpgateway

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: every
// gateway must end its sessions, child processes, stderr drains and
// transport readers on Close. Nothing is ignored: a leaked reader parked in
// internal/poll.runtime_pollWait is exactly what this must catch, so tests
// close their HTTP servers and clients' idle connections instead.
//
// Started with hostileEnv set, the binary is a hostile MCP server instead.
func TestMain(m *testing.M) {
	runHostileServer()
	goleak.VerifyTestMain(m)
}
