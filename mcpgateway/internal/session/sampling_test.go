package session

import (
	"testing"
	"time"
)

func TestSampleWindow(t *testing.T) {
	var w SampleWindow
	t0 := time.Unix(1000, 0)
	for i := range 3 {
		if !w.take(t0.Add(time.Duration(i)*time.Second), 3) {
			t.Fatalf("request %d refused", i+1)
		}
	}
	if w.take(t0.Add(59*time.Second), 3) {
		t.Error("a 4th request within the minute was taken")
	}
	if !w.take(t0.Add(60*time.Second), 3) {
		t.Error("the first request left the window after a minute, yet the next was refused")
	}
}
