package mcpregistry

import "testing"

func TestCompareVersions(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
		ok   bool
	}{
		{"1.0.0", "1.0.0", 0, true},
		{"1.10.0", "1.9.2", 1, true},
		{"2025.1.1", "2026.8.31", -1, true},
		{"2.0.0-beta", "2.0.0", -1, true},
		{"2.0.0", "2.0.0-rc.1", 1, true},
		{"1.0.0+build.5", "1.0.0", 0, true},
		{"1.0", "1.0.0", 0, true},
		{"v1.2.0", "1.1.9", 1, true},
		{"latest", "1.0.0", 0, false},
	} {
		got, ok := CompareVersions(tc.a, tc.b)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("CompareVersions(%q, %q) = %d, %v; want %d, %v", tc.a, tc.b, got, ok, tc.want, tc.ok)
		}
	}
}
