package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/elysia-go/elysia/tools"
)

// openAIChat is the OpenAI(-compatible) model: langchaingo's client, with
// the requests a decision makes (text messages, function tools, no
// streaming) encoded and their answers decoded here, in one pass each.
// langchaingo marshals each message through its own MarshalJSON, which
// encoding/json then compacts, and the whole request again, and compiles
// its model-name regular expressions on every call: about half of what a
// query cost the service's CPU. Every other request (streaming, JSON mode,
// tool choices, metadata, tool-call parts, reasoning models, which get
// their system message merged and no temperature) goes to langchaingo as
// before; so does every method but GenerateContent.
//
// The request sent is the one langchaingo would send, field for field
// (TestOpenAIChatSendsWhatLangchaingoSends), and the answer is read into
// the same llms.ContentResponse.
type openAIChat struct {
	*openai.LLM
	client *http.Client
	url    string // the base URL + /chat/completions
	token  string
	org    string
	model  string
}

// newOpenAIChat returns the model for base (the API's base URL), token,
// org and model, its requests carried by client (nil: http.DefaultClient,
// as langchaingo does).
func newOpenAIChat(fallback *openai.LLM, client *http.Client, base, token, org, model string) *openAIChat {
	if client == nil {
		client = http.DefaultClient
	}
	return &openAIChat{LLM: fallback, client: client, url: strings.TrimSuffix(base, "/") + "/chat/completions",
		token: token, org: org, model: model}
}

// GenerateContent implements llms.Model.
func (o *openAIChat) GenerateContent(ctx context.Context, msgs []llms.MessageContent, options ...llms.CallOption) (*llms.ContentResponse, error) {
	var opts llms.CallOptions
	for _, opt := range options {
		opt(&opts)
	}
	model := opts.Model
	if model == "" {
		model = o.model
	}
	reqBuf := chatBufs.Get().(*bytes.Buffer)
	reqBuf.Reset()
	body, ok, err := appendChatRequest(reqBuf.AvailableBuffer(), model, msgs, &opts)
	if err != nil || !ok {
		putChatBuf(reqBuf)
		if err != nil {
			return nil, err
		}
		return o.LLM.GenerateContent(ctx, msgs, options...)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+o.token)
	if o.org != "" {
		req.Header.Set("OpenAI-Organization", o.org)
	}
	resp, err := o.client.Do(req)
	if err != nil {
		return nil, sanitizeHTTPError(err)
	}
	defer func() { _ = resp.Body.Close() }() // read below; nothing to flush
	buf := chatBufs.Get().(*bytes.Buffer)
	defer putChatBuf(buf)
	buf.Reset()
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return nil, sanitizeHTTPError(err)
	}
	if resp.StatusCode != http.StatusOK {
		msg := fmt.Sprintf("API returned unexpected status code: %d", resp.StatusCode)
		var e struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(buf.Bytes(), &e); err != nil {
			return nil, errors.New(msg)
		}
		return nil, fmt.Errorf("%s: %s", msg, e.Error.Message)
	}
	// The server answered after reading the whole request: the transport
	// is done with its body, whose array can serve another request (on
	// the other paths it is left to the GC). Appending may have grown it
	// out of reqBuf's.
	if cap(body) > reqBuf.Cap() {
		reqBuf = bytes.NewBuffer(body[:0])
	}
	putChatBuf(reqBuf)
	return readChatResponse(buf.Bytes())
}

// chatBufs holds the buffers requests are encoded and answers read into:
// a decision's request is 5–15 KB, and one buffer serves both.
var chatBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledChatBuf is the largest buffer put back into chatBufs: a rare
// huge answer is left to the GC rather than kept.
const maxPooledChatBuf = 256 << 10

func putChatBuf(b *bytes.Buffer) {
	if b.Cap() <= maxPooledChatBuf {
		chatBufs.Put(b)
	}
}

// o1Pattern is langchaingo's pattern of the models that take no system
// message (its modelCapabilities).
var o1Pattern = regexp.MustCompile(`(?i)^o[13](-mini|-preview)?$`)

// reasoningModel reports whether langchaingo treats model as a reasoning
// model: no temperature sent (its isReasoningModel), or the system
// message merged into the first user message (o1Pattern).
func reasoningModel(model string) bool {
	return strings.HasPrefix(model, "o1-") || model == "o3" || strings.HasPrefix(model, "o3-") ||
		strings.HasPrefix(model, "gpt-5") || o1Pattern.MatchString(model)
}

// appendChatRequest appends the JSON of a chat completions request to b,
// field for field as langchaingo writes it. ok is false for a request it
// does not write (see openAIChat), which then goes to langchaingo.
func appendChatRequest(b []byte, model string, msgs []llms.MessageContent, opts *llms.CallOptions) (_ []byte, ok bool, err error) {
	if opts.StreamingFunc != nil || opts.StreamingReasoningFunc != nil || len(opts.Metadata) > 0 || opts.JSONMode ||
		opts.ToolChoice != nil || opts.FunctionCallBehavior != "" || len(opts.Functions) > 0 || reasoningModel(model) {
		return b, false, nil
	}
	b = append(b, `{"model":`...)
	b = tools.AppendJSONString(b, model, true)
	b = append(b, `,"messages":[`...)
	for i, m := range msgs {
		var role string
		switch m.Role {
		case llms.ChatMessageTypeSystem:
			role = "system"
		case llms.ChatMessageTypeAI:
			role = "assistant"
		case llms.ChatMessageTypeHuman, llms.ChatMessageTypeGeneric:
			role = "user"
		default:
			return b, false, nil
		}
		if len(m.Parts) != 1 {
			return b, false, nil
		}
		text, isText := m.Parts[0].(llms.TextContent)
		if !isText {
			return b, false, nil
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"role":"`...)
		b = append(b, role...)
		b = append(b, `","content":`...)
		b = tools.AppendJSONString(b, text.Text, true)
		b = append(b, '}')
	}
	b = append(b, `],"temperature":`...)
	b = strconv.AppendFloat(b, opts.Temperature, 'g', -1, 64)
	if opts.MaxTokens > 0 {
		b = append(b, `,"max_completion_tokens":`...)
		b = strconv.AppendInt(b, int64(opts.MaxTokens), 10)
	}
	if opts.N != 0 {
		b = append(b, `,"n":`...)
		b = strconv.AppendInt(b, int64(opts.N), 10)
	}
	if len(opts.StopWords) > 0 {
		b = append(b, `,"stop":[`...)
		for i, w := range opts.StopWords {
			if i > 0 {
				b = append(b, ',')
			}
			b = tools.AppendJSONString(b, w, true)
		}
		b = append(b, ']')
	}
	if opts.FrequencyPenalty != 0 {
		b = append(b, `,"frequency_penalty":`...)
		b = strconv.AppendFloat(b, opts.FrequencyPenalty, 'g', -1, 64)
	}
	if opts.PresencePenalty != 0 {
		b = append(b, `,"presence_penalty":`...)
		b = strconv.AppendFloat(b, opts.PresencePenalty, 'g', -1, 64)
	}
	if opts.Seed != 0 {
		b = append(b, `,"seed":`...)
		b = strconv.AppendInt(b, int64(opts.Seed), 10)
	}
	if len(opts.Tools) > 0 {
		b = append(b, `,"tools":[`...)
		for i, t := range opts.Tools {
			if t.Type != "function" || t.Function == nil {
				return b, false, nil
			}
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"type":"function","function":{"name":`...)
			b = tools.AppendJSONString(b, t.Function.Name, true)
			if t.Function.Description != "" {
				b = append(b, `,"description":`...)
				b = tools.AppendJSONString(b, t.Function.Description, true)
			}
			b = append(b, `,"parameters":`...)
			if b, err = appendParams(b, t.Function.Parameters); err != nil {
				return b, false, fmt.Errorf("the parameters of function %q: %w", t.Function.Name, err)
			}
			if t.Function.Strict {
				b = append(b, `,"strict":true`...)
			}
			b = append(b, "}}"...)
		}
		b = append(b, ']')
	}
	return append(b, '}'), true, nil
}

// appendParams appends a function's parameters as JSON: the JSON kept of
// a sealed schema (tools.Seal, as the tree's options' are), else
// json.Marshal's.
func appendParams(b []byte, params any) ([]byte, error) {
	if m, ok := params.(map[string]any); ok {
		if raw, ok := tools.SealedJSON(m); ok {
			return append(b, raw...), nil
		}
	}
	raw, err := json.Marshal(params)
	return append(b, raw...), err
}

// chatResponse is the part of a chat completion the tree reads, as
// langchaingo reads it.
type chatResponse struct {
	Choices []struct {
		Message struct {
			Content          string `json:"content"`
			ReasoningContent string `json:"reasoning_content"`
			ToolCalls        []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
			FunctionCall *struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function_call"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		TotalTokens         int `json:"total_tokens"`
		PromptTokensDetails struct {
			CachedTokens int `json:"cached_tokens"`
			AudioTokens  int `json:"audio_tokens"`
		} `json:"prompt_tokens_details"`
		CompletionTokensDetails struct {
			ReasoningTokens          int `json:"reasoning_tokens"`
			AudioTokens              int `json:"audio_tokens"`
			AcceptedPredictionTokens int `json:"accepted_prediction_tokens"`
			RejectedPredictionTokens int `json:"rejected_prediction_tokens"`
		} `json:"completion_tokens_details"`
	} `json:"usage"`
}

// readChatResponse reads a chat completion into the response langchaingo
// makes of it.
func readChatResponse(body []byte) (*llms.ContentResponse, error) {
	var r chatResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, err
	}
	if len(r.Choices) == 0 {
		return nil, openai.ErrEmptyResponse
	}
	u := &r.Usage
	choices := make([]*llms.ContentChoice, len(r.Choices))
	for i := range r.Choices {
		c := &r.Choices[i]
		choice := &llms.ContentChoice{
			Content:          c.Message.Content,
			ReasoningContent: c.Message.ReasoningContent,
			StopReason:       c.FinishReason,
			GenerationInfo: map[string]any{
				"CompletionTokens":                   u.CompletionTokens,
				"PromptTokens":                       u.PromptTokens,
				"TotalTokens":                        u.TotalTokens,
				"ReasoningTokens":                    u.CompletionTokensDetails.ReasoningTokens,
				"PromptAudioTokens":                  u.PromptTokensDetails.AudioTokens,
				"ThinkingContent":                    c.Message.ReasoningContent,
				"ThinkingTokens":                     u.CompletionTokensDetails.ReasoningTokens,
				"PromptCachedTokens":                 u.PromptTokensDetails.CachedTokens,
				"CompletionAudioTokens":              u.CompletionTokensDetails.AudioTokens,
				"CompletionReasoningTokens":          u.CompletionTokensDetails.ReasoningTokens,
				"CompletionAcceptedPredictionTokens": u.CompletionTokensDetails.AcceptedPredictionTokens,
				"CompletionRejectedPredictionTokens": u.CompletionTokensDetails.RejectedPredictionTokens,
			},
		}
		if c.FinishReason == "function_call" {
			choice.FuncCall = &llms.FunctionCall{}
			if fc := c.Message.FunctionCall; fc != nil {
				choice.FuncCall.Name, choice.FuncCall.Arguments = fc.Name, fc.Arguments
			}
		}
		for _, tc := range c.Message.ToolCalls {
			choice.ToolCalls = append(choice.ToolCalls, llms.ToolCall{ID: tc.ID, Type: tc.Type,
				FunctionCall: &llms.FunctionCall{Name: tc.Function.Name, Arguments: tc.Function.Arguments}})
		}
		if len(choice.ToolCalls) > 0 {
			choice.FuncCall = choice.ToolCalls[0].FunctionCall
		}
		choices[i] = choice
	}
	return &llms.ContentResponse{Choices: choices}, nil
}

// sanitizeHTTPError is langchaingo's: a failed request says what kind of
// failure it was, not the request (its URL may hold credentials).
func sanitizeHTTPError(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return errors.New("request timeout: API call exceeded deadline")
	}
	if errors.Is(err, context.Canceled) {
		return errors.New("request cancelled")
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return errors.New("request timeout: network operation exceeded timeout")
	}
	if _, ok := err.(net.Error); ok {
		return errors.New("network error: failed to reach API server")
	}
	return err
}
