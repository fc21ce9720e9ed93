package callstream

import "errors"

// ErrEventsDropped reports that messages of a stream right after a
// reader's position are gone, so that the reader cannot have them all:
// past MaxBytes a stream drops its oldest reports, and a mirror misses
// what its holder dropped or could not relay. Stream.Since returns it
// along with what is kept, and Registry.Resume refuses, with it, a
// client whose Last-Event-ID is before such a gap.
var ErrEventsDropped = errors.New("events dropped")
