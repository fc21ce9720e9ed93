package llm

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

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
	b = appendJSONString(b, model)
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
		b = appendJSONString(b, text.Text)
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
			b = appendJSONString(b, w)
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
			b = appendJSONString(b, t.Function.Name)
			if t.Function.Description != "" {
				b = append(b, `,"description":`...)
				b = appendJSONString(b, t.Function.Description)
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

// appendJSONString appends s to b as a JSON string, as encoding/json
// writes it (HTML characters, U+2028 and U+2029 escaped; invalid UTF-8
// as U+FFFD).
//
// A decision context is JSON, so a quote to escape comes every ten bytes
// or so, too often for a loop that stops at each one: a mispredicted
// branch and a short copy cost more than the bytes between them. So a
// byte is written without a branch on whether it is escaped (see
// jsonEscape), and eight bytes of which none needs escaping (in prose,
// most) are copied at once.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	// The output is written by index into o, w bytes of it in use. Room
	// for every byte written as two keeps the fast path from checking;
	// the slow path checks for its six-byte escapes.
	b = slices.Grow(b, 2*len(s)+2)
	o := b[:cap(b)]
	w := len(b)
	o[w] = '"'
	w++
	for i := 0; i < len(s); {
		end := len(s)
		if len(s)-i >= 8 {
			x := load64(s[i:])
			if !needsEscape(x) {
				binary.LittleEndian.PutUint64(o[w:], x)
				w += 8
				i += 8
				continue
			}
			end = i + 8
		}
		for i < end {
			c := s[i]
			if e := jsonEscape[c]; e.n != 0 {
				o[w] = '\\' // overwritten by e.last when e.n is 1
				o[w+int(e.n)-1] = e.last
				w += int(e.n)
				i++
				continue
			}
			if need := 6 + 2*(len(s)-i) + 1; len(o)-w < need {
				o = slices.Grow(o[:w], need)
				o = o[:cap(o)]
			}
			if c < utf8.RuneSelf {
				w += copy(o[w:], `\u00`)
				o[w] = hex[c>>4]
				o[w+1] = hex[c&0xf]
				w += 2
				i++
				continue
			}
			r, size := utf8.DecodeRuneInString(s[i:])
			switch {
			case r == utf8.RuneError && size == 1:
				w += copy(o[w:], `\ufffd`)
			case r == '\u2028' || r == '\u2029':
				w += copy(o[w:], `\u202`)
				o[w] = hex[r&0xf]
				w++
			default:
				w += copy(o[w:], s[i:i+size])
			}
			i += size
		}
	}
	o[w] = '"'
	return o[:w+1]
}

// jsonEscape tells, for each byte, what appendJSONString's fast path
// writes: n is 1 for a byte written as it is (last), 2 for a backslash
// and last, 0 for a byte left to the slow path (a control character
// written as \u00XX, an HTML character, or a byte of a multi-byte
// sequence).
var jsonEscape = func() (t [256]struct{ n, last byte }) {
	for c := range utf8.RuneSelf {
		if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
			t[c].n, t[c].last = 1, byte(c)
		}
	}
	for c, last := range map[byte]byte{'"': '"', '\\': '\\', '\n': 'n', '\r': 'r', '\t': 't', '\b': 'b', '\f': 'f'} {
		t[c].n, t[c].last = 2, last
	}
	return t
}()

// load64 returns the first eight bytes of s as a little-endian word (one
// load: the compiler combines the byte loads).
func load64(s string) uint64 {
	s = s[:8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// needsEscape reports whether a byte of x, eight bytes of a string, is
// not written as it is: a control character, a byte of a multi-byte
// sequence, or one of " \ < > &. It tests the eight bytes at once: each
// term of m has a high bit set if, and only if, a byte is of its kind.
func needsEscape(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	m := (x-0x20*ones)&^x | // below 0x20
		x | // 0x80 and above
		zeroBytes(x|0x04*ones^'&'*ones) | // '"' (0x22) or '&' (0x26)
		zeroBytes(x|0x02*ones^'>'*ones) | // '<' (0x3c) or '>' (0x3e)
		zeroBytes(x^'\\'*ones)
	return m&highs != 0
}

// zeroBytes has the high bit set in v's lowest zero byte (maybe in bytes
// above it too, where the borrow passes), and in no byte if none is zero.
func zeroBytes(v uint64) uint64 {
	const ones = 0x0101010101010101
	return (v - ones) &^ v
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
