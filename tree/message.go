package tree

import (
	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/tree/prompt"
)

// Message is one turn of a conversation's history.
type Message = prompt.Message

// Task is one tool run of the current query, as the decision model sees it.
type Task = prompt.Task

// PreviousError is a self-healing error of the current query.
type PreviousError = prompt.PreviousError

// DigestEntry returns the short form the decision prompt gives a result of
// an earlier query (its first _REF_ID and a one-line digest: how many
// objects, their keys), as the JSON of a [tools.EnvEntry]. It is the form
// in which Stores keep a result once a later query makes it old; it is
// built without marshalling e's objects. When it is not shorter than e's
// JSON, the prompt shows e whole, and a Store should too.
func DigestEntry(e tools.EnvEntry) []byte { return prompt.DigestEntry(e) }
