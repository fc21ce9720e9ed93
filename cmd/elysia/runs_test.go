package main

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

func TestRunTrackerWaitsForRunsAndRefusesNewOnes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var tr runTracker
		if !tr.begin() {
			t.Fatal("begin refused before close")
		}
		go func() {
			time.Sleep(time.Second) // a query finishing (fake time)
			tr.end()
		}()
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		if !tr.closeAndWait(ctx) {
			t.Fatal("closeAndWait gave up although the run ended in time")
		}
		if tr.begin() {
			t.Fatal("a query began after close")
		}
	})
}

func TestRunTrackerGivesUpAtTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var tr runTracker
		tr.begin()
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if tr.closeAndWait(ctx) {
			t.Fatal("closeAndWait reported done with a run still going")
		}
		tr.end() // must not panic after the wait gave up
	})
}
