package tree

// Log keys this package repeats (STYLE.md §9).
const (
	logKeyUser         = "user"
	logKeyConversation = "conversation"
	logKeyNode         = "node"
	logKeyReason       = "reason"
	logKeyErr          = "err"
)
