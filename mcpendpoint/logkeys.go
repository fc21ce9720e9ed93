package mcpendpoint

// Log keys this package repeats (STYLE.md §9).
const (
	logKeyServer = "server"
	logKeyUser   = "user"
	logKeyErr    = "err"
	logKeyWanted = "wanted"
	logKeyName   = "name"
	logKeyStatus = "status"
)
