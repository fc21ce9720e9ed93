package tree

import (
	"errors"
	"fmt"
)

// ErrBusy is returned by [Conversation.Run] when another query of the same
// conversation is still running after [Options.QueryWait]. web maps it to 409.
var ErrBusy = errors.New("conversation is busy with another query")

// ErrStoreUnavailable is matched by errors of a [Store] or [Locker] that
// failed because the database behind it is unavailable (down, stalled,
// full, out of connections), not because of what was asked; a Store says so
// by wrapping it. web maps it to 503 with a plain message.
var ErrStoreUnavailable = errors.New("store unavailable")

// ErrNotFound is matched by errors about a branch, tool or conversation that
// does not exist.
var ErrNotFound = errors.New("not found")

// ErrExists is matched by errors about adding a tool or branch whose name is
// already taken in the tree.
var ErrExists = errors.New("already exists")

// ErrInvalid is matched by errors about an operation that is not allowed,
// such as removing the root or an unknown init mode.
var ErrInvalid = errors.New("invalid operation")

// ErrStopped is the cause a caller gives the ctx of a run a user stopped
// (context.WithCancelCause): [Conversation.Run] then ends the query as
// stopped, telling the user and saving it so (see Run).
var ErrStopped = errors.New("stopped by the user")

// errDeleted is matched by errors about a conversation that was deleted
// (Manager.Delete) while the caller held it. It matches ErrNotFound.
var errDeleted = fmt.Errorf("conversation was deleted: %w", ErrNotFound)
