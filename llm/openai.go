package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"reflect"
	"strings"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"
)

// errEmptyChat is what langchaingo's openai client returns for a response
// without choices.
var errEmptyChat = errors.New("empty response")

// openAIChat is the openai provider's model. A decision's call — text
// messages, function tools and no other option — it sends itself; every
// other call goes to langchaingo's client, which it otherwise matches.
//
// langchaingo's request types are json.Marshalers (ChatRequest and each
// ChatMessage), so encoding/json re-compacts their output, byte by byte: a
// decision's ~10 KB prompt, all of it inside JSON strings, was scanned three
// times, which was most of the JSON work of a new conversation's query. The
// body written here is the same JSON object with the same fields, encoded
// once.
type openAIChat struct {
	*openai.LLM
	client            *http.Client
	url, token, model string
	organization      string
	// direct is false for models whose calls all go to langchaingo.
	direct bool
}

// GenerateContent implements llms.Model.
func (o *openAIChat) GenerateContent(ctx context.Context, msgs []llms.MessageContent, options ...llms.CallOption) (*llms.ContentResponse, error) {
	var opts llms.CallOptions
	for _, opt := range options {
		opt(&opts)
	}
	tools := opts.Tools
	opts.Tools = nil
	if !o.direct || !reflect.ValueOf(opts).IsZero() {
		return o.LLM.GenerateContent(ctx, msgs, options...)
	}
	body, ok, err := o.encode(msgs, tools)
	if err != nil {
		return nil, err
	}
	if !ok {
		return o.LLM.GenerateContent(ctx, msgs, options...)
	}
	return o.post(ctx, body)
}

// Call implements llms.Model through GenerateContent.
func (o *openAIChat) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, o, prompt, options...)
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatFunction struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Parameters  any    `json:"parameters"`
	Strict      bool   `json:"strict,omitempty"`
}

type chatTool struct {
	Type     string       `json:"type"`
	Function chatFunction `json:"function"`
}

// chatRequest is the body langchaingo's client sends for such a call:
// temperature is always sent, tools only when there are some.
type chatRequest struct {
	Model       string        `json:"model"`
	Messages    []chatMessage `json:"messages"`
	Temperature float64       `json:"temperature"`
	Tools       []chatTool    `json:"tools,omitempty"`
}

// encode writes the request body, or reports false for messages or tools
// it leaves to langchaingo (anything but one text part per system, user or
// assistant message; tools other than functions).
func (o *openAIChat) encode(msgs []llms.MessageContent, tools []llms.Tool) ([]byte, bool, error) {
	req := chatRequest{Model: o.model, Messages: make([]chatMessage, len(msgs))}
	for i, m := range msgs {
		if len(m.Parts) != 1 {
			return nil, false, nil
		}
		text, isText := m.Parts[0].(llms.TextContent)
		if !isText {
			return nil, false, nil
		}
		switch m.Role {
		case llms.ChatMessageTypeSystem:
			req.Messages[i].Role = "system"
		case llms.ChatMessageTypeHuman, llms.ChatMessageTypeGeneric:
			req.Messages[i].Role = "user"
		case llms.ChatMessageTypeAI:
			req.Messages[i].Role = "assistant"
		default:
			return nil, false, nil
		}
		req.Messages[i].Content = text.Text
	}
	if len(tools) > 0 {
		req.Tools = make([]chatTool, len(tools))
		for i, t := range tools {
			if t.Type != "function" || t.Function == nil {
				return nil, false, nil
			}
			req.Tools[i] = chatTool{Type: "function", Function: chatFunction{Name: t.Function.Name,
				Description: t.Function.Description, Parameters: t.Function.Parameters, Strict: t.Function.Strict}}
		}
	}
	body, err := json.Marshal(&req)
	return body, err == nil, err
}

type chatCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// chatResponse holds the parts of a chat completion langchaingo's client
// reads.
type chatResponse struct {
	Choices []struct {
		Message struct {
			Content          string    `json:"content"`
			ReasoningContent string    `json:"reasoning_content"`
			FunctionCall     *chatCall `json:"function_call"`
			ToolCalls        []struct {
				ID       string   `json:"id"`
				Type     string   `json:"type"`
				Function chatCall `json:"function"`
			} `json:"tool_calls"`
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

// post sends body and reads the answer as langchaingo's client does, with
// the same errors.
func (o *openAIChat) post(ctx context.Context, body []byte) (*llms.ContentResponse, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+o.token)
	if o.organization != "" {
		req.Header.Set("OpenAI-Organization", o.organization)
	}
	client := o.client
	if client == nil {
		client = http.DefaultClient
	}
	r, err := client.Do(req)
	if err != nil {
		return nil, sanitizeHTTPError(err)
	}
	defer r.Body.Close()
	if r.StatusCode != http.StatusOK {
		msg := fmt.Sprintf("API returned unexpected status code: %d", r.StatusCode)
		var e struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.NewDecoder(r.Body).Decode(&e); err != nil {
			return nil, errors.New(msg)
		}
		return nil, fmt.Errorf("%s: %s", msg, e.Error.Message)
	}
	var res chatResponse
	if err := json.NewDecoder(r.Body).Decode(&res); err != nil {
		return nil, err
	}
	if len(res.Choices) == 0 {
		return nil, errEmptyChat
	}
	u := res.Usage
	choices := make([]*llms.ContentChoice, len(res.Choices))
	for i, c := range res.Choices {
		m := c.Message
		ch := &llms.ContentChoice{
			Content:          m.Content,
			ReasoningContent: m.ReasoningContent,
			StopReason:       c.FinishReason,
			GenerationInfo: map[string]any{
				"CompletionTokens":                   u.CompletionTokens,
				"PromptTokens":                       u.PromptTokens,
				"TotalTokens":                        u.TotalTokens,
				"ReasoningTokens":                    u.CompletionTokensDetails.ReasoningTokens,
				"PromptAudioTokens":                  u.PromptTokensDetails.AudioTokens,
				"ThinkingContent":                    m.ReasoningContent,
				"ThinkingTokens":                     u.CompletionTokensDetails.ReasoningTokens,
				"PromptCachedTokens":                 u.PromptTokensDetails.CachedTokens,
				"CompletionAudioTokens":              u.CompletionTokensDetails.AudioTokens,
				"CompletionReasoningTokens":          u.CompletionTokensDetails.ReasoningTokens,
				"CompletionAcceptedPredictionTokens": u.CompletionTokensDetails.AcceptedPredictionTokens,
				"CompletionRejectedPredictionTokens": u.CompletionTokensDetails.RejectedPredictionTokens,
			},
		}
		if c.FinishReason == "function_call" {
			fc := chatCall{}
			if m.FunctionCall != nil {
				fc = *m.FunctionCall
			}
			ch.FuncCall = &llms.FunctionCall{Name: fc.Name, Arguments: fc.Arguments}
		}
		for _, t := range m.ToolCalls {
			ch.ToolCalls = append(ch.ToolCalls, llms.ToolCall{ID: t.ID, Type: t.Type,
				FunctionCall: &llms.FunctionCall{Name: t.Function.Name, Arguments: t.Function.Arguments}})
		}
		if len(ch.ToolCalls) > 0 {
			ch.FuncCall = ch.ToolCalls[0].FunctionCall
		}
		choices[i] = ch
	}
	return &llms.ContentResponse{Choices: choices}, nil
}

// sanitizeHTTPError is langchaingo's: a failed request's error without its
// details, which may hold the URL.
func sanitizeHTTPError(err error) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return errors.New("request timeout: API call exceeded deadline")
	case errors.Is(err, context.Canceled):
		return errors.New("request cancelled")
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return errors.New("request timeout: network operation exceeded timeout")
	}
	if _, ok := err.(net.Error); ok { //nolint:errorlint // as langchaingo
		return errors.New("network error: failed to reach API server")
	}
	return err
}

// directModel reports whether calls to model may be sent directly: not the
// reasoning models, whose system messages and temperature langchaingo
// treats specially.
func directModel(model string) bool {
	m := strings.ToLower(model)
	for _, p := range []string{"o1", "o3", "o4", "o5", "gpt-5"} {
		if strings.HasPrefix(m, p) {
			return false
		}
	}
	return true
}
