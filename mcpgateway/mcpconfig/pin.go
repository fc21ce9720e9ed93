package mcpconfig

import (
	"encoding/json"
	"fmt"
)

// PinMode says what the gateway does when a tool's definition differs from
// the one pinned when the server's tools were first listed: "pin" in
// mcp.json.
type PinMode string

// Pin modes.
const (
	// PinBlock (the zero value, "block" in mcp.json) quarantines a changed
	// or new tool until a person approves it.
	PinBlock PinMode = ""
	// PinWarn ("warn") lets a changed or new tool through with a warning.
	PinWarn PinMode = "warn"
	// PinOff ("off") does not pin.
	PinOff PinMode = "off"
)

// errPinValue is the message of a "pin" value that is none of the modes;
// got says what it was.
func errPinValue(got string) string {
	return `pin must be "block", "warn" or "off", got ` + got
}

// valid reports whether m is one of the modes.
func (m PinMode) valid() bool {
	return m == PinBlock || m == PinWarn || m == PinOff
}

// String returns the mode as mcp.json spells it ("block" for the zero
// value).
func (m PinMode) String() string {
	if m == PinBlock {
		return "block"
	}
	return string(m)
}

// UnmarshalJSON takes the values mcp.json takes: "block", "warn" or "off"
// (and null, block).
func (m *PinMode) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch v := v.(type) {
	case nil:
		*m = PinBlock
	case string:
		if v == "block" {
			*m = PinBlock
			return nil
		}
		if mode := PinMode(v); mode != PinBlock && mode.valid() {
			*m = mode
			return nil
		}
		return fmt.Errorf("%s", errPinValue(fmt.Sprintf("%q", v)))
	default:
		return fmt.Errorf("%s", errPinValue(fmt.Sprintf("%T", v)))
	}
	return nil
}

// pin reads the "pin" key.
func (sp *serverParse) pin(v *jnode) {
	switch {
	case v.kind == jString && v.str == "block":
		sp.s.Pin = PinBlock
	case v.kind == jString && (v.str == string(PinWarn) || v.str == string(PinOff)):
		sp.s.Pin = PinMode(v.str)
	case v.kind == jString:
		sp.p.errAt(v.off, sp.name, "%s", errPinValue(fmt.Sprintf("%q", v.str)))
	default:
		sp.p.errAt(v.off, sp.name, "%s", errPinValue(v.kind.String()))
	}
}
