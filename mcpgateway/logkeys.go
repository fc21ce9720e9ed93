package mcpgateway

// Log keys this package repeats (STYLE.md §9). A gateway's logger is scoped
// with logKeyServer once (New), so no record of it names the server again.
const (
	logKeyServer = "server"
	logKeyUser   = "user"
	logKeyTool   = "tool"
	logKeyTask   = "task"
	logKeyFrom   = "from"
	logKeyErr    = "err"
)
