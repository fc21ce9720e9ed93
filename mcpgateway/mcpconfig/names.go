package mcpconfig

import "strings"

// ToolName returns the gateway tool name for a server: "mcp_" + the server's
// name in lower case with every character outside [a-z0-9_] turned into "_"
// ("api-ai-mcp" → "mcp_api_ai_mcp").
func ToolName(server string) string {
	var b strings.Builder
	b.Grow(4 + len(server))
	b.WriteString("mcp_")
	for _, r := range strings.ToLower(server) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}
