package web

// Log keys this package repeats (STYLE.md §9).
const (
	logKeyUserID         = "user_id"
	logKeyConversationID = "conversation_id"
	logKeyQueryID        = "query_id"
	logKeyRoute          = "route"
	logKeyStatus         = "status"
	logKeyStream         = "stream"
	logKeyType           = "type"
	logKeyTimeout        = "timeout"
	logKeyErr            = "err"
)
