package mcpconfig

// serverKeys are the keys of a server entry that serverParse.member reads,
// for the suggestion an unknown key gets (TestServerKeysAreKnown keeps the
// two together).
var serverKeys = []string{
	"enabled", "disabled", "inputs", "name", "type", "transport", "command", "server_script_path", "cwd",
	"envFile", "url", "serverUrl", "httpUrl", "prefix", "description", "branch", "args", "env", "headers", "tools",
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
		d := editDistance(key, k)
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

// editDistance is the Damerau-Levenshtein distance (optimal string
// alignment) between a and b, by bytes: keys are ASCII.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64 // no key is that long: not a misspelling
	}
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
