package textdist

import (
	"strings"
	"testing"
)

func TestDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"command", "command", 0}, {"comand", "command", 1}, {"headres", "headers", 1},
		{"evn", "env", 1}, {"", "abc", 3}, {"kitten", "sitting", 3}, {"café", "cafe", 1},
		{strings.Repeat("a", 500), strings.Repeat("a", 500) + "b", 0}, // compared by their first 128 runes
	} {
		if got := Distance(tt.a, tt.b); got != tt.want {
			t.Errorf("Distance(%.20q, %.20q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
