package signin

// Log keys this package repeats (STYLE.md §9).
const (
	logKeyServer = "server"
	logKeyUserID = "user_id"
	logKeyStatus = "status"
	logKeyErr    = "err"
)
