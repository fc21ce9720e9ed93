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
		if !tr.Begin() {
			t.Fatal("begin refused before close")
		}
		go func() {
			time.Sleep(time.Second) // a query finishing (fake time)
			tr.End()
		}()
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		if !tr.closeAndWait(ctx) {
			t.Fatal("closeAndWait gave up although the run ended in time")
		}
		if tr.Begin() {
			t.Fatal("a query began after close")
		}
	})
}

func TestRunTrackerGivesUpAtTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var tr runTracker
		tr.Begin()
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if tr.closeAndWait(ctx) {
			t.Fatal("closeAndWait reported done with a run still going")
		}
		tr.End() // must not panic after the wait gave up
	})
}
