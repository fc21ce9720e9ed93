package mcpconfig

import (
	"encoding/json"
	"fmt"
)

// SamplingMode says whether a server may ask the service's model to write
// a message (sampling/createMessage), and who approves each request:
// "sampling" in mcp.json, true meaning SamplingAsk.
type SamplingMode string

// Sampling modes.
const (
	// SamplingOff (the zero value, false in mcp.json) refuses every
	// sampling request.
	SamplingOff SamplingMode = ""
	// SamplingAsk (true or "ask") shows each request to the user whose call
	// it is, who approves, edits or denies it and sees the reply before it
	// goes back: the human in the loop the MCP specification asks for.
	// With no interactive user the request is refused.
	SamplingAsk SamplingMode = "ask"
	// SamplingAuto ("auto") answers unattended, the operator's standing
	// approval; the user sees a line with the request and the reply.
	SamplingAuto SamplingMode = "auto"
)

// errSamplingValue is the message of a "sampling" value that is none of
// the modes; got says what it was.
func errSamplingValue(got string) string {
	return `sampling must be true, "ask", "auto" or false, got ` + got
}

// Enabled reports whether the server may ask for sampling at all.
func (m SamplingMode) Enabled() bool { return m != SamplingOff }

// valid reports whether m is one of the modes.
func (m SamplingMode) valid() bool {
	return m == SamplingOff || m == SamplingAsk || m == SamplingAuto
}

// UnmarshalJSON takes the values mcp.json takes: true, false, "ask" or
// "auto" (and null, off).
func (m *SamplingMode) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch v := v.(type) {
	case nil:
		*m = SamplingOff
	case bool:
		*m = SamplingOff
		if v {
			*m = SamplingAsk
		}
	case string:
		if mode := SamplingMode(v); mode != SamplingOff && mode.valid() {
			*m = mode
			return nil
		}
		return fmt.Errorf("%s", errSamplingValue(fmt.Sprintf("%q", v)))
	default:
		return fmt.Errorf("%s", errSamplingValue(fmt.Sprintf("%T", v)))
	}
	return nil
}

// sampling reads the "sampling" key.
func (sp *serverParse) sampling(v *jnode) {
	switch {
	case v.kind == jBool && v.boolean:
		sp.s.Sampling = SamplingAsk
	case v.kind == jBool:
		sp.s.Sampling = SamplingOff
	case v.kind == jString && (v.str == string(SamplingAsk) || v.str == string(SamplingAuto)):
		sp.s.Sampling = SamplingMode(v.str)
	case v.kind == jString:
		sp.p.errAt(v.off, sp.name, "%s", errSamplingValue(fmt.Sprintf("%q", v.str)))
	default:
		sp.p.errAt(v.off, sp.name, "%s", errSamplingValue(v.kind.String()))
	}
}
