// Package llm owns the choice of the decision model: [FromEnv] picks a
// langchaingo provider (openai, or any OpenAI-compatible server; anthropic;
// ollama; googleai) from the environment, and [NewOffline] returns the offline
// planner, a deterministic llms.Model that needs no network and decides by
// matching the user's prompt against the gateways and tools it is offered.
//
// It is the only package that imports langchaingo's providers; the rest of the
// module sees an llms.Model. Of the project it may import only tools. The
// offline planner holds no server- or tool-specific strings: it reads the
// decision context that tree sends (docs/DECISION_PROMPT.md) and recognises a
// gateway by the shape of its inputs.
package llm
