package mcpregistry

import (
	"strconv"
	"strings"
)

// CompareVersions compares two versions as semantic versions: numeric
// dot-separated parts compared as numbers ("1.10.0" > "1.9.2"), a version
// with a pre-release ("2.0.0-beta") before the same version without, and
// build metadata ("+build.5") ignored. It returns -1, 0 or +1; ok is false
// when either is not of that form, and then the result means nothing.
func CompareVersions(a, b string) (cmp int, ok bool) {
	an, apre, aok := splitVersion(a)
	bn, bpre, bok := splitVersion(b)
	if !aok || !bok {
		return 0, false
	}
	for i := range max(len(an), len(bn)) {
		var x, y int
		if i < len(an) {
			x = an[i]
		}
		if i < len(bn) {
			y = bn[i]
		}
		if x != y {
			if x < y {
				return -1, true
			}
			return 1, true
		}
	}
	switch {
	case apre == bpre:
		return 0, true
	case apre == "":
		return 1, true
	case bpre == "":
		return -1, true
	case apre < bpre:
		return -1, true
	}
	return 1, true
}

// splitVersion splits "1.2.3-rc.1+b" into [1 2 3] and "rc.1".
func splitVersion(v string) (nums []int, pre string, ok bool) {
	v, _, _ = strings.Cut(strings.TrimPrefix(v, "v"), "+")
	v, pre, _ = strings.Cut(v, "-")
	for p := range strings.SplitSeq(v, ".") {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return nil, "", false
		}
		nums = append(nums, n)
	}
	return nums, pre, len(nums) > 0
}
