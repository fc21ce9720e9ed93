package mcpconfig

import "github.com/elysia-go/elysia/internal/textdist"

// serverKeys are the keys of a server entry that serverParse.member reads,
// for the suggestion an unknown key gets (TestServerKeysAreKnown keeps the
// two together).
var serverKeys = []string{
	"enabled", "disabled", "inputs", "name", "type", "transport", "command", "server_script_path", "cwd",
	"envFile", "copies", "policy", "url", "serverUrl", "httpUrl", "prefix", "description", "branch", "args", "env", "headers", "tools",
	"connect_timeout", "call_timeout", "max_call_time", "elicitation_timeout", "eager", "per_user",
	"oauth", "registry", "sampling", "pin", "log_level", "protocol_version", "max_message_size",
	"sampling_per_call", "sampling_per_minute", "sampling_max_input", "roots",
}

// closestKey returns the key of keys that key is most likely a misspelling
// of: at most two edits away (one for keys of four letters or fewer), and
// nearer than any other; "" when none is.
func closestKey(key string, keys []string) string {
	best, bestD, tie := "", 3, false
	for _, k := range keys {
		d := textdist.Distance(key, k)
		limit := 2
		if len(k) <= 4 {
			limit = 1
		}
		switch {
		case d > limit || d > bestD:
		case d < bestD:
			best, bestD, tie = k, d, false
		default:
			tie = true
		}
	}
	if tie || best == key {
		return ""
	}
	return best
}
