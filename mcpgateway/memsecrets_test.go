package mcpgateway

import (
	"context"
	"sync"
)

// memoryUserSecrets is a UserSecrets in memory, for tests. The
// zero value is ready to use; it is safe for concurrent use.
type memoryUserSecrets struct {
	// mu guards vals.
	mu   sync.Mutex
	vals map[[2]string]string // (user, name) → value
}

var _ UserSecrets = (*memoryUserSecrets)(nil)

// Secret returns user's secret name, or ErrNoSecret.
func (m *memoryUserSecrets) Secret(_ context.Context, user, name string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.vals[[2]string{user, name}]
	if !ok {
		return "", ErrNoSecret
	}
	return v, nil
}

// Set sets user's secret name to value.
func (m *memoryUserSecrets) Set(user, name, value string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.vals == nil {
		m.vals = make(map[[2]string]string)
	}
	m.vals[[2]string{user, name}] = value
}

// Delete forgets user's secret name; a missing one is no error.
func (m *memoryUserSecrets) Delete(user, name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.vals, [2]string{user, name})
}
