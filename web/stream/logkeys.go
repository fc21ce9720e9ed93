package stream

// Log keys this package repeats (STYLE.md §9).
const (
	logKeyUserID         = "user_id"
	logKeyConversationID = "conversation_id"
	logKeyQueryID        = "query_id"
	logKeyStatus         = "status"
	logKeyStream         = "stream"
	logKeyKind           = "kind"
	logKeyTimeout        = "timeout"
	logKeyLimit          = "limit"
	logKeyPanic          = "panic"
	logKeyErr            = "err"
)
