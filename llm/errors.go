package llm

import "errors"

// ErrUnknownProvider is matched (with errors.Is) by the error FromEnv returns
// when ELYSIA_LLM names no provider it knows.
var ErrUnknownProvider = errors.New("unknown model provider")

// ErrMissingKey is matched (with errors.Is) by the error FromEnv returns when
// the chosen provider needs a credential that is not set. The message names
// the environment variable to set.
var ErrMissingKey = errors.New("missing api key")
