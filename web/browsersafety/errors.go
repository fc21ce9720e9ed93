package browsersafety

import "errors"

// ErrForbidden is matched by Guard.Check's refusal of a Host the service
// does not answer to or an Origin that may not send the request. It maps
// to 403.
var ErrForbidden = errors.New("refused by the browser safety checks")

// ErrUnsupportedMediaType is matched by Guard.Check's refusal of a body
// that is not application/json. It maps to 415.
var ErrUnsupportedMediaType = errors.New("request body is not JSON")

// ErrUnreadableBody is matched by Guard.Check's error when the body of
// unknown length could not be read. It maps to 400.
var ErrUnreadableBody = errors.New("request body could not be read")

// refusal is a Check error: its text, shown to the client as is, says
// what to change; it matches kind.
type refusal struct {
	kind error
	msg  string
}

func (e *refusal) Error() string { return e.msg }
func (e *refusal) Unwrap() error { return e.kind }

func refuse(kind error, msg string) error { return &refusal{kind: kind, msg: msg} }
