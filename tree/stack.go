package tree

// A query's goroutine ends up needing tens of KB of stack: the JSON Schema
// validation of a tool's inputs recurses with large frames, and so does
// SQLite's VDBE (modernc.org/sqlite is C made Go). Go starts a goroutine's
// stack small and, each time it overflows, copies all of it into one twice
// the size, adjusting every frame's pointers: at the depth a query reaches
// that was 3.5 % of the service's CPU (BENCHMARKS.md, issue 29). growStack
// takes that room at the start of the query, while the stack is still
// shallow and cheap to copy; on a goroutine whose stack is already large
// it only clears the frame.

// queryStack is the frame growStack takes: the stack grows to the next
// power of two above it and what the query's callers hold.
const queryStack = 48 << 10

//go:noinline
func growStack() {
	var frame [queryStack]byte
	touchStack(frame[:])
}

// touchStack keeps growStack's frame from being optimised away.
//
//go:noinline
func touchStack(b []byte) { b[len(b)-1] = 1 }
