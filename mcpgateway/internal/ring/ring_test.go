package ring

import (
	"slices"
	"testing"
)

// TestBufferKeepsTheNewest: a Buffer of 3 keeps the last 3 values, oldest
// first, across wraps, and Last(n) returns the newest n of them.
func TestBufferKeepsTheNewest(t *testing.T) {
	b := New[int](3)
	if got := b.Last(3); len(got) != 0 {
		t.Fatalf("empty buffer: Last = %v, want none", got)
	}
	for i := 1; i <= 7; i++ {
		b.Add(i)
	}
	if got, want := b.Last(3), []int{5, 6, 7}; !slices.Equal(got, want) {
		t.Errorf("Last(3) = %v, want %v", got, want)
	}
	if got, want := b.Last(2), []int{6, 7}; !slices.Equal(got, want) {
		t.Errorf("Last(2) = %v, want %v", got, want)
	}
	got := b.Last(3)
	got[0] = 99 // the caller's slice
	if again := b.Last(3); again[0] != 5 {
		t.Errorf("changing Last's slice changed the buffer: %v", again)
	}
}
