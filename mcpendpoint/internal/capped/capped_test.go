package capped

import (
	"fmt"
	"slices"
	"sync"
	"testing"
)

func TestPerUser(t *testing.T) {
	for limit, want := range map[int]int{0: 8, 1: 8, 128: 8, 144: 9, 1024: 64} {
		if got := PerUser(limit); got != want {
			t.Errorf("PerUser(%d) = %d, want %d", limit, got, want)
		}
	}
}

type call struct{ name string }

func TestTable(t *testing.T) {
	var tb Table[*call]
	if tb.Get("a") != nil || tb.Len() != 0 || len(tb.Values()) != 0 {
		t.Fatal("the zero Table is not empty")
	}
	tb.Forget("a", &call{}) // nothing there: nothing done

	a, b := &call{"a"}, &call{"b"}
	if !tb.Hold("a", "alice", a, 2) {
		t.Fatal("a not held")
	}
	if !tb.Hold("a", "alice", a, 2) { // again: still one
		t.Fatal("a not held again")
	}
	if tb.Len() != 1 || tb.Get("a") != a {
		t.Fatalf("after holding a twice: Len %d, Get %v; want a once", tb.Len(), tb.Get("a"))
	}
	if !tb.Hold("b", "bob", b, 2) {
		t.Fatal("b not held")
	}
	if tb.Hold("c", "carol", &call{"c"}, 2) {
		t.Error("c held past the limit of 2")
	}
	if tb.Get("c") != nil {
		t.Error("c kept though refused")
	}
	if got := tb.Values(); len(got) != 2 || !slices.Contains(got, a) || !slices.Contains(got, b) {
		t.Errorf("Values = %v, want a and b", got)
	}

	tb.Forget("a", b) // not b's id: nothing done
	if tb.Get("a") != a {
		t.Error("a forgotten by another value's Forget")
	}
	tb.Forget("a", a)
	tb.Forget("a", a)
	if tb.Get("a") != nil || tb.Len() != 1 {
		t.Errorf("after forgetting a: Get %v, Len %d", tb.Get("a"), tb.Len())
	}
	if tb.perUser["alice"] != 0 || tb.perUser["bob"] != 1 || len(tb.perUser) != 1 {
		t.Errorf("counted per user: %v, want bob's 1 alone", tb.perUser)
	}
}

func TestTablePerUser(t *testing.T) {
	var tb Table[*call]
	const limit = 1024
	mine := make([]*call, PerUser(limit))
	for i := range mine {
		mine[i] = &call{fmt.Sprint(i)}
		if !tb.Hold(mine[i].name, "alice", mine[i], limit) {
			t.Fatalf("alice's call %d of %d not held", i+1, len(mine))
		}
	}
	if tb.Hold("more", "alice", &call{"more"}, limit) {
		t.Errorf("alice held more than PerUser(%d) = %d", limit, PerUser(limit))
	}
	if !tb.Hold("bob's", "bob", &call{"bob's"}, limit) {
		t.Error("bob refused for alice's share")
	}
	tb.Forget(mine[0].name, mine[0])
	if !tb.Hold("more", "alice", &call{"more"}, limit) {
		t.Error("alice refused after one of hers was forgotten")
	}
}

func TestTableConcurrent(t *testing.T) {
	var tb Table[*call]
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			user := fmt.Sprint("user", i%4)
			for j := range 100 {
				c := &call{fmt.Sprint(i, "-", j)}
				if tb.Hold(c.name, user, c, 1<<20) {
					_ = tb.Get(c.name)
					_ = tb.Values()
					tb.Forget(c.name, c)
				}
			}
		})
	}
	wg.Wait()
	if tb.Len() != 0 || len(tb.perUser) != 0 {
		t.Errorf("after every Forget: Len %d, per user %v", tb.Len(), tb.perUser)
	}
}
