package mcpconfig

import "fmt"

// DefaultMaxMessageSize bounds one JSON-RPC message of a stdio server when
// max_message_size is not set: 4 MiB.
const DefaultMaxMessageSize = 4 << 20

// Bounds of max_message_size in mcp.json.
const (
	minMaxMessageSize = 4 << 10
	maxMaxMessageSize = 1 << 30
)

// MessageLimit returns the largest message, in bytes without the newline,
// the gateway reads from the server: max_message_size, else
// DefaultMaxMessageSize.
func (s ServerConfig) MessageLimit() int {
	if s.MaxMessageSize > 0 {
		return s.MaxMessageSize
	}
	return DefaultMaxMessageSize
}

// intLimit is a whole-number setting of a server with its bounds; zero
// means its default.
type intLimit struct {
	key      string
	val      *int
	min, max int
	bytes    bool // the unit is bytes
}

// bounds is the error message of a value out of bounds.
func (l intLimit) bounds() string {
	unit := ""
	if l.bytes {
		unit = " of bytes"
	}
	return fmt.Sprintf("%s must be a whole number%s from %d to %d", l.key, unit, l.min, l.max)
}

// intLimits are s's whole-number settings, pointing into s.
func (s *ServerConfig) intLimits() []intLimit {
	return []intLimit{
		{"max_message_size", &s.MaxMessageSize, minMaxMessageSize, maxMaxMessageSize, true},
		{"sampling_per_call", &s.SamplingPerCall, 1, 100, false},
		{"sampling_per_minute", &s.SamplingPerMinute, 1, 1000, false},
		{"sampling_max_input", &s.SamplingMaxInput, 1 << 10, 4 << 20, true},
	}
}
