package tree

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/tmc/langchaingo/llms"
)

// choice is what the model chose: an option name, its raw arguments and the
// sentence for the user.
type choice struct {
	name      string
	args      map[string]any
	reasoning string
}

// errNoDecision is returned when a model answer names no option.
var errNoDecision = errors.New("the answer calls no function and holds no JSON object naming an option")

// readChoice extracts the decision from a model response: the first tool
// call (or legacy function call), else the tolerant JSON fallback read from
// the text content.
func readChoice(resp *llms.ContentResponse) (choice, error) {
	if resp == nil || len(resp.Choices) == 0 || resp.Choices[0] == nil {
		return choice{}, errors.New("the model returned no choice")
	}
	c := resp.Choices[0]
	var fc *llms.FunctionCall
	for _, tc := range c.ToolCalls {
		if tc.FunctionCall != nil {
			fc = tc.FunctionCall
			break
		}
	}
	if fc == nil {
		fc = c.FuncCall
	}
	if fc != nil {
		args, err := decodeArgs(fc.Arguments)
		if err != nil {
			return choice{name: fc.Name}, fmt.Errorf("arguments of %s: %w", fc.Name, err)
		}
		return choice{name: fc.Name, args: args, reasoning: strings.TrimSpace(c.Content)}, nil
	}
	return parseDecision(c.Content)
}

// decodeArgs decodes a function call's arguments, a JSON object given as a
// string. Empty and null mean no arguments; numbers stay json.Number.
func decodeArgs(s string) (map[string]any, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "null" {
		return map[string]any{}, nil
	}
	v, err := decodeValue([]byte(s))
	if err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	return asArgs(v)
}

func decodeValue(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("trailing data after the JSON value")
	}
	return v, nil
}

// asArgs accepts an object, or a string holding one (models double-encode).
func asArgs(v any) (map[string]any, error) {
	switch a := v.(type) {
	case nil:
		return map[string]any{}, nil
	case map[string]any:
		return a, nil
	case string:
		return decodeArgs(a)
	}
	return nil, fmt.Errorf("arguments must be a JSON object, not %T", v)
}

// parseDecision is the fallback for models without function calling: it
// finds a JSON object naming an option in text, inside a ```json fence or
// surrounded by prose. The option is under "function", "tool" or "name"
// (a string, or an object with "name" and "arguments"); the inputs under
// "arguments", "inputs" or "parameters", as an object or a JSON string.
func parseDecision(text string) (choice, error) {
	for _, cand := range candidates(text) {
		obj, ok := cand.(map[string]any)
		if !ok {
			continue
		}
		if c, ok, err := fromObject(obj); ok {
			return c, err
		}
	}
	return choice{}, errNoDecision
}

// maxObjectTries bounds the '{' positions tried, so that hostile output full
// of braces costs linear, not quadratic, time.
const maxObjectTries = 32

// candidates returns the JSON values found in text: fenced blocks first,
// then every object that starts at a '{' and decodes.
func candidates(text string) []any {
	var out []any
	rest := text
	for {
		i := strings.Index(rest, "```")
		if i < 0 {
			break
		}
		body := rest[i+3:]
		j := strings.Index(body, "```")
		if j < 0 {
			break
		}
		block := body[:j]
		if nl := strings.IndexByte(block, '\n'); nl >= 0 && !strings.Contains(block[:nl], "{") {
			block = block[nl+1:] // the fence's language tag
		}
		if v, err := decodeValue([]byte(strings.TrimSpace(block))); err == nil {
			out = append(out, v)
		}
		rest = body[j+3:]
	}
	tries := 0
	for i := 0; i < len(text) && tries < maxObjectTries; i++ {
		if text[i] != '{' {
			continue
		}
		tries++
		dec := json.NewDecoder(strings.NewReader(text[i:]))
		dec.UseNumber()
		var v map[string]any
		if err := dec.Decode(&v); err == nil {
			out = append(out, v)
			i += int(dec.InputOffset()) - 1
		}
	}
	return out
}

// fromObject reads a decision from one decoded object; ok reports whether
// the object names an option at all.
func fromObject(obj map[string]any) (c choice, ok bool, err error) {
	for _, key := range []string{"function", "tool", "name"} {
		switch f := obj[key].(type) {
		case string:
			if f == "" {
				continue
			}
			c.name = f
		case map[string]any:
			if n, _ := f["name"].(string); n != "" {
				c.name = n
				if _, has := obj["arguments"]; !has {
					obj["arguments"] = f["arguments"]
				}
			}
		}
		if c.name != "" {
			break
		}
	}
	if c.name == "" {
		return choice{}, false, nil
	}
	c.reasoning, _ = obj["reasoning"].(string)
	c.args = map[string]any{}
	for _, key := range []string{"arguments", "inputs", "parameters"} {
		if v, has := obj[key]; has {
			args, err := asArgs(v)
			if err != nil {
				return c, true, fmt.Errorf("arguments of %s: %w", c.name, err)
			}
			c.args = args
			break
		}
	}
	return c, true, nil
}
