package session

// Log keys the package uses more than once (STYLE.md §9); the gateway's
// records carry the same keys.
const (
	logKeyErr  = "err"
	logKeyTask = "task"
)
