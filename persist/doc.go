// Package persist encodes Elysia-Go's conversations onto the store: it
// satisfies the tree package's Store interfaces (conversation state, the
// list, deletion and each user's own tree changes) with the store package's
// tables, turning the tree's values into the JSON columns the store keeps
// opaque, and back.
//
// It also reads what the web layer shows of a saved conversation (its event
// log) and creates users. The replica lock the tree asks for
// ([tree.Locker]) is the store's own [store.Store.Lock], used as it is.
//
// persist imports the project's tree, store and tools packages and no
// third-party package. Store errors that mean "does not exist" come back
// matching [tree.ErrNotFound], so callers branch on the tree's sentinels
// only.
package persist
