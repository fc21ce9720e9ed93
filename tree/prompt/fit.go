package prompt

import (
	"math"
	"slices"
)

// candidate is an entry on its way into the prompt.
type candidate struct {
	l     *promptList
	index int
	old   bool
	forms *entryForms
	// whole is set when the entry is shown whole, not in its short form.
	whole bool
}

// fitEnvironment chooses the form of the newest entries of lists so that
// the environment, whose JSON around the entries takes frame bytes, keeps
// within lim; see writeEnvironment. The sizes it adds up are exact but for
// a comma per list, so the result is never over the limits.
func fitEnvironment(lists []*promptList, byKey map[ResultKey]*promptList, recent []ResultKey, frame int, lim envLimits, cache *FormCache, st *envStats) error {
	f := newFitter(lists, frame, lim, cache)
	if err := f.takeRecent(byKey, recent); err != nil {
		return err
	}
	if err := f.takeEarlier(lists); err != nil {
		return err
	}
	f.widen()
	f.show(st)
	for _, l := range lists {
		st.omitted += l.first
	}
	return nil
}

// fitter adds up the bytes of the entries fitEnvironment takes, in two
// passes: first every entry that fits in its short form, newest first, then
// as many of them whole as fit, in the same order.
type fitter struct {
	// total bounds all of the environment, old the results of earlier
	// queries within it.
	total, old int
	// used is the bytes taken so far, usedOld those of earlier queries'
	// results.
	used, usedOld int
	cache         *FormCache
	// taken holds the entries taken, newest first within each list.
	taken []*candidate
}

// newFitter returns a fitter with every entry of lists in its list's note.
func newFitter(lists []*promptList, frame int, lim envLimits, cache *FormCache) fitter {
	f := fitter{total: lim.total, old: lim.old, used: frame, cache: cache}
	if f.total < 0 {
		f.total = math.MaxInt
	}
	if f.old < 0 || f.old > f.total {
		f.old = f.total
	}
	for _, l := range lists {
		if len(l.entries) > 0 {
			f.used += l.noteBytes + 1 // the note and a comma after it
		}
	}
	return f
}

// takeRecent takes the query's own results, newest first.
func (f *fitter) takeRecent(byKey map[ResultKey]*promptList, recent []ResultKey) error {
	fromEnd := map[ResultKey]int{}
	for _, k := range slices.Backward(recent) {
		l := byKey[k]
		if l == nil {
			continue
		}
		i := len(l.entries) - 1 - fromEnd[k]
		fromEnd[k]++
		if i >= 0 && i >= len(l.entries)-l.current {
			if err := f.take(&candidate{l: l, index: i}); err != nil {
				return err
			}
		}
	}
	return nil
}

// takeEarlier takes the earlier results, by how far they are from the end
// of their list, lists in key order; a list stops at its first entry that
// does not fit, so the loop visits only what is shown, plus one per list.
func (f *fitter) takeEarlier(lists []*promptList) error {
	for d := 1; ; d++ {
		open := false
		for _, l := range lists {
			i := len(l.entries) - d
			if l.closed || i < 0 {
				continue
			}
			open = true
			if i >= len(l.entries)-l.current {
				continue // a result of this query, taken by takeRecent
			}
			if err := f.take(&candidate{l: l, index: i, old: true}); err != nil {
				return err
			}
		}
		if !open {
			return nil
		}
	}
}

// take adds c in its short form if it fits, and otherwise closes its list:
// the list's older entries stay in its note.
func (f *fitter) take(c *candidate) error {
	l := c.l
	if l.closed {
		return nil
	}
	if c.forms == nil {
		forms, err := entryFormsOf(l, c.index, c.old, f.room(c.old), f.cache)
		if err != nil {
			return err
		}
		c.forms = forms
	}
	cost := len(c.forms.short) + 1
	if c.index == 0 {
		cost -= l.noteBytes + 1 // the list needs no note any more
	}
	if f.used+cost > f.total || c.old && f.usedOld+len(c.forms.short) > f.old {
		l.closed = true
		return nil
	}
	f.used += cost
	if c.old {
		f.usedOld += len(c.forms.short)
	}
	l.first = c.index
	f.taken = append(f.taken, c)
	return nil
}

// room is the bytes left for an entry, of an earlier query if old.
func (f *fitter) room(old bool) int {
	room := f.total - f.used
	if old {
		room = min(room, f.old-f.usedOld)
	}
	return room
}

// widen shows whole, in the order taken, the entries whose whole form
// still fits in place of their short one.
func (f *fitter) widen() {
	for _, c := range f.taken {
		if c.forms.whole == nil {
			continue
		}
		extra := len(c.forms.whole) - len(c.forms.short)
		if f.used+extra > f.total || c.old && f.usedOld+extra > f.old {
			continue
		}
		f.used += extra
		if c.old {
			f.usedOld += extra
		}
		c.whole = true
	}
}

// show gives each list the forms of its entries taken, oldest first, and
// counts in st those shown short.
func (f *fitter) show(st *envStats) {
	for _, c := range slices.Backward(f.taken) {
		form := c.forms.short
		if c.whole {
			form = c.forms.whole
		} else {
			st.short++
		}
		c.l.shown = append(c.l.shown, form)
	}
}
