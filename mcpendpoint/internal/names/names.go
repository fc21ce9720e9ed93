// Package names makes the names the MCP endpoint lists the tools and
// prompts of its servers under: a server's prefix and the tool's own name,
// cleaned to the characters clients accept, cut to MaxLen and made unique;
// and it finds the listed names closest to one a client got wrong.
package names

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/elysia-go/elysia/internal/textdist"
)

// MaxLen is the longest name Exposed and Dedupe make: Claude Desktop,
// VS Code and OpenAI refuse longer ones.
const MaxLen = 64

// hashLen is the length of the stable hash that ends a cut name.
const hashLen = 8

// cleanName keeps s's characters from [A-Za-z0-9_-], turning any other into
// '_'.
func cleanName(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// shortHash is a stable hash of s, hashLen hex digits.
func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:hashLen]
}

// Exposed is the name a client sees for tool of a server whose tools are
// prefixed with prefix: prefix, sep, tool, cleaned; a name longer than
// MaxLen keeps its start and ends with '_' and a hash of the whole
// original, so it stays stable and unique.
func Exposed(prefix, sep, tool string) string {
	full := tool
	if prefix != "" {
		full = prefix + sep + tool
	}
	name := cleanName(full)
	if name == "" {
		name = "tool"
	}
	if len(name) > MaxLen {
		name = name[:MaxLen-hashLen-1] + "_" + shortHash(full)
	}
	return name
}

// Dedupe makes name unique among taken: the first holder keeps it, a later
// one gets "_2", "_3", ... (cut to fit MaxLen). It records the result in
// taken and reports whether it had to change name.
func Dedupe(name string, taken map[string]bool) (string, bool) {
	if !taken[name] {
		taken[name] = true
		return name, false
	}
	for i := 2; ; i++ {
		suffix := "_" + strconv.Itoa(i)
		base := name
		if len(base)+len(suffix) > MaxLen {
			base = base[:MaxLen-len(suffix)]
		}
		if c := base + suffix; !taken[c] {
			taken[c] = true
			return c, true
		}
	}
}

// Closest returns up to n of names closest to want: those sharing a
// substring with it first, then by edit distance.
func Closest(want string, names []string, n int) []string {
	type scored struct {
		name string
		d    int
	}
	// A client chooses want: past the longest name a tool is listed under,
	// more of it only costs.
	lw := strings.ToLower(want[:min(len(want), 4*MaxLen)])
	var all []scored
	for _, nm := range names {
		ln := strings.ToLower(nm)
		d := textdist.Distance(lw, ln)
		if lw != "" && (strings.Contains(ln, lw) || strings.Contains(lw, ln)) {
			d -= 1000
		}
		all = append(all, scored{nm, d})
	}
	// Insertion sort: small n, stable.
	for i := 1; i < len(all); i++ {
		for j := i; j > 0 && all[j].d < all[j-1].d; j-- {
			all[j], all[j-1] = all[j-1], all[j]
		}
	}
	out := make([]string, 0, n)
	for _, s := range all {
		if len(out) == n {
			break
		}
		out = append(out, s.name)
	}
	return out
}
