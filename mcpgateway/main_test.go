package mcpgateway

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: every
// gateway must end its sessions, child processes and readers on Close.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// net/http keeps a goroutine per idle keep-alive connection of
		// httptest servers' own clients until they are closed.
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
	)
}
