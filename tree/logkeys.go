package tree

// Log keys this package repeats (STYLE.md §9).
const (
	logKeyUser         = "user"
	logKeyConversation = "conversation"
	logKeyNode         = "node"
	logKeyOp           = "op"
	logKeyReason       = "reason"
	logKeyErr          = "err"
)
