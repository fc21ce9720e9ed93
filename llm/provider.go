package llm

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/anthropic"
	"github.com/tmc/langchaingo/llms/googleai"
	"github.com/tmc/langchaingo/llms/ollama"
	"github.com/tmc/langchaingo/llms/openai"
)

// Provider names a model provider, as ELYSIA_LLM spells it.
type Provider string

// The providers FromEnv knows.
const (
	ProviderOpenAI    Provider = "openai"
	ProviderAnthropic Provider = "anthropic"
	ProviderOllama    Provider = "ollama"
	ProviderGoogleAI  Provider = "googleai"
	ProviderOffline   Provider = "offline"
)

// Environment variables FromEnv reads.
const (
	EnvProvider      = "ELYSIA_LLM"
	EnvModel         = "ELYSIA_MODEL"
	EnvOpenAIKey     = "OPENAI_API_KEY"
	EnvOpenAIBaseURL = "OPENAI_BASE_URL"
	EnvOpenAIOrg     = "OPENAI_ORGANIZATION"
	EnvAnthropicKey  = "ANTHROPIC_API_KEY"
	EnvAnthropicURL  = "ANTHROPIC_BASE_URL"
	EnvOllamaHost    = "OLLAMA_HOST"
	EnvGoogleKey     = "GOOGLE_API_KEY"
)

const (
	defaultOpenAIURL  = "https://api.openai.com/v1"
	defaultOllamaURL  = "http://127.0.0.1:11434"
	placeholderAPIKey = "unused"
)

// defaultModels is the model each provider uses when ELYSIA_MODEL is unset.
var defaultModels = map[Provider]string{
	ProviderOpenAI:    "gpt-4o-mini",
	ProviderAnthropic: "claude-sonnet-4-5",
	ProviderOllama:    "llama3.1",
	ProviderGoogleAI:  "gemini-2.0-flash",
	ProviderOffline:   "offline-planner",
}

// DefaultModel returns the model p uses when ELYSIA_MODEL is unset, or ""
// for a provider FromEnv does not know.
func DefaultModel(p Provider) string { return defaultModels[p] }

// autoOrder is the order in which credentials pick a provider when
// ELYSIA_LLM is unset.
var autoOrder = []struct {
	env      string
	provider Provider
}{
	{EnvOpenAIKey, ProviderOpenAI},
	{EnvAnthropicKey, ProviderAnthropic},
	{EnvOllamaHost, ProviderOllama},
	{EnvGoogleKey, ProviderGoogleAI},
}

// Info describes the chosen model for logs and the user config. It never
// holds a credential.
type Info struct {
	// Provider is the provider chosen.
	Provider Provider `json:"provider"`
	// Model is the model name sent to the provider ("offline-planner" for
	// the offline planner).
	Model string `json:"model"`
	// BaseURL is the server the provider talks to, without user info or
	// query; empty for the offline planner and googleai.
	BaseURL string `json:"base_url,omitempty"`
}

// SendsFunctions reports whether the provider's client sends the model the
// functions a call offers (llms.WithTools). langchaingo's ollama client
// sends none; the model then learns the options from the prompt and
// answers with the tree's JSON fallback.
func (i Info) SendsFunctions() bool { return i.Provider != ProviderOllama }

// String returns "provider/model", plus " at <base URL>" when one is set.
func (i Info) String() string {
	s := string(i.Provider) + "/" + i.Model
	if i.BaseURL != "" {
		s += " at " + i.BaseURL
	}
	return s
}

// Options tunes FromEnv. The zero value (or a nil *Options) means defaults.
type Options struct {
	// HTTPClient carries the provider's requests. Nil means a client from
	// NewHTTPClient with the fields below, built once per FromEnv call and
	// shared by every request of the model. googleai ignores it: it speaks
	// gRPC, and google's client library drops the API key when given an
	// HTTP client.
	HTTPClient *http.Client
	// MaxConns is how many idle keep-alive connections to the provider the
	// client keeps: size it to the number of queries served at once. Zero:
	// 128.
	MaxConns int
	// ResponseHeaderTimeout bounds the wait for a response's headers,
	// which a model that does not stream sends only once it has answered.
	// Zero: 3 minutes.
	ResponseHeaderTimeout time.Duration
}

// FromEnv chooses the decision model from environment variables read through
// lookup (os.LookupEnv in production; a variable set to "" counts as unset).
//
// ELYSIA_LLM selects openai, anthropic, ollama, googleai or offline. When it
// is unset, the first of OPENAI_API_KEY, ANTHROPIC_API_KEY, OLLAMA_HOST and
// GOOGLE_API_KEY that is set picks the provider, and with none set the offline
// planner decides. ELYSIA_MODEL names the model (DefaultModel otherwise).
// OPENAI_BASE_URL points openai at any OpenAI-compatible server; such servers
// rarely check keys, so with a base URL the key may be left unset.
// langchaingo's ollama client sends no functions, so with ollama the tree
// relies on its JSON fallback; for function calling, point openai at
// Ollama's /v1 instead. anthropic's content blocks are merged into one
// choice, as the tree expects.
//
// A chosen provider whose credential is missing is an error matching
// ErrMissingKey that names the variable; an unknown ELYSIA_LLM matches
// ErrUnknownProvider. FromEnv does no network I/O; ctx is used only by
// providers whose constructor takes one (googleai). The returned model is
// safe for concurrent use; when it also implements io.Closer (googleai holds
// gRPC connections) the caller owns it and closes it at shutdown.
func FromEnv(ctx context.Context, lookup func(string) (string, bool), opts *Options) (llms.Model, Info, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	get := func(key string) string {
		v, ok := lookup(key)
		if !ok {
			return ""
		}
		return strings.TrimSpace(v)
	}
	provider, err := chooseProvider(get)
	if err != nil {
		return nil, Info{}, err
	}
	if o.HTTPClient == nil && provider != ProviderOffline && provider != ProviderGoogleAI {
		o.HTTPClient = NewHTTPClient(&o)
	}
	info := Info{Provider: provider, Model: get(EnvModel)}
	if info.Model == "" || provider == ProviderOffline {
		info.Model = defaultModels[provider]
	}
	model, err := newModel(ctx, get, &o, &info)
	if err != nil {
		return nil, Info{}, fmt.Errorf("configure %s model: %w", provider, err)
	}
	return model, info, nil
}

func chooseProvider(get func(string) string) (Provider, error) {
	if name := strings.ToLower(get(EnvProvider)); name != "" {
		p := Provider(name)
		if _, ok := defaultModels[p]; !ok {
			return "", fmt.Errorf("%s=%q: %w (want openai, anthropic, ollama, googleai or offline)", EnvProvider, name, ErrUnknownProvider)
		}
		return p, nil
	}
	for _, a := range autoOrder {
		if get(a.env) != "" {
			return a.provider, nil
		}
	}
	return ProviderOffline, nil
}

func newModel(ctx context.Context, get func(string) string, o *Options, info *Info) (llms.Model, error) {
	switch info.Provider {
	case ProviderOpenAI:
		return newOpenAI(get, o, info)
	case ProviderAnthropic:
		key := get(EnvAnthropicKey)
		if key == "" {
			return nil, missingKey(EnvAnthropicKey)
		}
		opts := []anthropic.Option{anthropic.WithToken(key), anthropic.WithModel(info.Model)}
		if base := get(EnvAnthropicURL); base != "" {
			info.BaseURL = redactURL(base)
			opts = append(opts, anthropic.WithBaseURL(base))
		}
		if o.HTTPClient != nil {
			opts = append(opts, anthropic.WithHTTPClient(o.HTTPClient))
		}
		m, err := anthropic.New(opts...)
		if err != nil {
			return nil, err
		}
		return blockMerger{m}, nil
	case ProviderOllama:
		base, err := ollamaURL(get(EnvOllamaHost))
		if err != nil {
			return nil, err
		}
		info.BaseURL = redactURL(base)
		opts := []ollama.Option{ollama.WithServerURL(base), ollama.WithModel(info.Model)}
		if o.HTTPClient != nil {
			opts = append(opts, ollama.WithHTTPClient(o.HTTPClient))
		}
		return ollama.New(opts...)
	case ProviderGoogleAI:
		key := get(EnvGoogleKey)
		if key == "" {
			return nil, missingKey(EnvGoogleKey)
		}
		return googleai.New(ctx, googleai.WithAPIKey(key), googleai.WithDefaultModel(info.Model))
	default:
		return NewOffline(), nil
	}
}

func newOpenAI(get func(string) string, o *Options, info *Info) (llms.Model, error) {
	key, base := get(EnvOpenAIKey), get(EnvOpenAIBaseURL)
	switch {
	case key == "" && base == "":
		return nil, missingKey(EnvOpenAIKey)
	case key == "":
		key = placeholderAPIKey
	}
	if base == "" {
		base = defaultOpenAIURL
	}
	if _, err := url.ParseRequestURI(base); err != nil {
		return nil, fmt.Errorf("%s: %w", EnvOpenAIBaseURL, err)
	}
	info.BaseURL = redactURL(base)
	// Every option is passed explicitly: the client otherwise reads the
	// process environment itself, behind lookup's back.
	opts := []openai.Option{
		openai.WithToken(key),
		openai.WithModel(info.Model),
		openai.WithBaseURL(base),
		openai.WithOrganization(get(EnvOpenAIOrg)),
	}
	if o.HTTPClient != nil {
		opts = append(opts, openai.WithHTTPClient(o.HTTPClient))
	}
	fallback, err := openai.New(opts...)
	if err != nil {
		return nil, err
	}
	return newOpenAIChat(fallback, o.HTTPClient, base, key, get(EnvOpenAIOrg), info.Model), nil
}

func missingKey(env string) error {
	return fmt.Errorf("set %s: %w", env, ErrMissingKey)
}

// ollamaURL turns OLLAMA_HOST (which, as for the ollama CLI, may be a bare
// host, host:port or a URL) into a URL. ollama.WithServerURL exits the
// process on a bad URL, so it is checked here first.
func ollamaURL(host string) (string, error) {
	if host == "" {
		return defaultOllamaURL, nil
	}
	bare := !strings.Contains(host, "://")
	if bare {
		host = "http://" + host
	}
	u, err := url.Parse(host)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("%s is not a host, host:port or URL", EnvOllamaHost)
	}
	if bare && u.Port() == "" {
		u.Host += ":11434"
	}
	return u.String(), nil
}

// redactURL drops user info and query, which may hold credentials.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}
