package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elysia-go/elysia/internal/jsonscan"
)

// cancelNoteWait bounds sending notifications/cancelled for a call whose
// caller gave up (mcp-go's Client waits as long).
const cancelNoteWait = 5 * time.Second

// callTool sends one tools/call on s, a session before 2026-07-28, as
// mcp-go's Client.CallTool does on such a session, through the same
// transport (and so through the history and the probes), and parses the
// result once (parseCallResult). mcp-go's Client decodes a result six
// times over (a probe, the whole, each item twice, the structured
// content into maps): on a small result that was a tenth of the
// service's CPU per call. Everything else stays mcp-go's: the transport,
// the types, the errors (a transport failure is a *transport.Error, a
// JSON-RPC error its AsError), and every other request. A caller who gives
// up has the request cancelled on the server (notifications/cancelled,
// over stdio; over HTTP the request's end is the cancellation), as
// mcp-go's Client does.
//
// Its id is one of the conn's own, as the raw requests' are
// (rawRequestID).
func (c *Conn) callTool(ctx context.Context, s *Session, params mcp.CallToolParams, header http.Header) (*mcp.CallToolResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, mcptransport.NewError(err)
	}
	t := s.client.GetTransport()
	req := mcptransport.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION,
		ID:      c.rawRequestID(mcp.MethodToolsCall),
		Method:  string(mcp.MethodToolsCall),
		Params:  params,
		Header:  header,
	}
	resp, err := t.SendRequest(ctx, req)
	if err != nil {
		if ctx.Err() != nil {
			cancelOnServer(ctx, t, req.ID)
		}
		return nil, mcptransport.NewError(err)
	}
	if resp == nil { // a transport that answered nothing, without an error
		return nil, mcptransport.NewError(errors.New("tools/call: no response"))
	}
	if resp.Error != nil {
		return nil, resp.Error.AsError()
	}
	return parseCallResult(resp.Result)
}

// cancelOnServer tells the server of t, off the caller's path, that the
// request id is no longer wanted; over HTTP the request's end said so.
func cancelOnServer(ctx context.Context, t mcptransport.Interface, id mcp.RequestId) {
	if _, ok := t.(mcptransport.HTTPConnection); ok {
		return
	}
	note := mcp.JSONRPCNotification{
		JSONRPC: mcp.JSONRPC_VERSION,
		Notification: mcp.Notification{
			Method: string(mcp.MethodNotificationCancelled),
			Params: mcp.NotificationParams{AdditionalFields: map[string]any{"requestId": id, "reason": ctx.Err().Error()}},
		},
	}
	// Sent off the caller's path, as mcp-go's Client does. mcp-go's stdio
	// transport looks at ctx only before it writes: a child that stopped
	// reading holds the write until the session closes its stdin (a later
	// request's wedge guard, or the conn's close), which ends it.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelNoteWait)
	go func() {
		defer cancel()
		_ = t.SendNotification(ctx, note)
	}()
}

// errContentMissing is a tools/call result without content.
var errContentMissing = errors.New("content is missing")

// callResultWire is a tools/call result as it arrives.
type callResultWire struct {
	Meta              *mcp.Meta         `json:"_meta"`
	ResultType        mcp.ResultType    `json:"resultType"`
	Content           contentList       `json:"content"`
	StructuredContent json.RawMessage   `json:"structuredContent"`
	IsError           bool              `json:"isError"`
	InputRequests     mcp.InputRequests `json:"inputRequests"`
	RequestState      string            `json:"requestState"`
}

// contentList is a result's content items, each as sent; present tells a
// missing member from a null one, which mcp-go takes for no content. The
// items are decoded once the whole result is (contentItem): a member that
// comes twice counts as its last.
type contentList struct {
	present bool
	raws    []json.RawMessage
}

func (l *contentList) UnmarshalJSON(b []byte) error {
	l.present = true
	l.raws = nil
	return json.Unmarshal(b, &l.raws)
}

// parseCallResult decodes a tools/call result, accepting and refusing
// what mcp.ParseCallToolResult does, with the same errors, in a pass over
// the result, one more over its content, and one over each text item
// (mcp-go makes six, and decodes the structured content into maps). The
// structured content is kept as sent (RawStructuredContent), not decoded
// into StructuredContent: the gateway reads only the bytes.
//
// A result asking for more input (2026-07-28) is refused: callTool serves
// only sessions before that version, which have no such thing.
func parseCallResult(raw json.RawMessage) (*mcp.CallToolResult, error) {
	if raw == nil {
		return nil, errors.New("response is nil")
	}
	if res, ok := parseTextResult(raw); ok {
		return res, nil
	}
	return decodeCallResult(raw)
}

// decodeCallResult is parseCallResult through encoding/json.
func decodeCallResult(raw json.RawMessage) (*mcp.CallToolResult, error) {
	var w callResultWire
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, fmt.Errorf("failed to unmarshal response: %w", err)
	}
	if w.ResultType == mcp.ResultTypeInputRequired {
		return nil, fmt.Errorf("the server asked for more input (resultType %q), which the protocol version of this session does not have", w.ResultType)
	}
	if !w.Content.present {
		return nil, errContentMissing
	}
	res := &mcp.CallToolResult{IsError: w.IsError}
	res.Meta = w.Meta
	res.ResultType = w.ResultType
	res.InputRequests, res.RequestState = w.InputRequests, w.RequestState
	if len(w.Content.raws) > 0 {
		res.Content = make([]mcp.Content, len(w.Content.raws))
		for i, raw := range w.Content.raws {
			c, err := contentItem(raw)
			if err != nil {
				return nil, fmt.Errorf("failed to unmarshal response: %w", err)
			}
			res.Content[i] = c
		}
	}
	if len(w.StructuredContent) > 0 {
		res.RawStructuredContent = w.StructuredContent
	}
	return res, nil
}

// contentItem decodes one content item: a text item (nearly every one) in
// one pass, any other through mcp.UnmarshalContent, which also gives the
// error for an item that is not one.
func contentItem(item json.RawMessage) (mcp.Content, error) {
	var t mcp.TextContent
	if json.Unmarshal(item, &t) == nil && t.Type == mcp.ContentTypeText {
		return t, nil
	}
	return mcp.UnmarshalContent(item)
}

// The members of a result, and of a text item, that decodeCallResult
// reads. parseTextResult leaves a result naming one of them in another
// case (encoding/json matches it) to decodeCallResult, and one it does not
// read itself: _meta, resultType, inputRequests, requestState, annotations.
var (
	resultMembers = []string{"content", "isError", "structuredContent", "_meta", "resultType", "inputRequests", "requestState"}
	textMembers   = []string{"type", "text", "annotations", "_meta"}
)

// parseTextResult takes the result nearly every tool sends (text items, and
// isError and structuredContent or not) to what decodeCallResult makes of
// it, in one pass over it and without reflection; ok is false for any other
// result, and for anything unusual in this one (a member named twice, or in
// another case, a string with escapes where a plain one was looked for),
// which decodeCallResult then decodes. FuzzParseCallResult holds both to
// mcp-go, and the one to the other.
func parseTextResult(raw []byte) (*mcp.CallToolResult, bool) {
	if !json.Valid(raw) {
		return nil, false
	}
	var content, structured []byte
	isError := false
	var seen uint8
	once := func(bit uint8) bool {
		dup := seen&bit != 0
		seen |= bit
		return !dup
	}
	for key, val := range jsonscan.Members(raw) {
		switch string(key) {
		case "content":
			if !once(1) || val[0] != '[' {
				return nil, false
			}
			content = val
		case "isError":
			if !once(2) {
				return nil, false
			}
			switch val[0] {
			case 't':
				isError = true
			case 'f', 'n':
			default:
				return nil, false
			}
		case "structuredContent":
			if !once(4) {
				return nil, false
			}
			structured = val
		default:
			if jsonscan.MayName(key, resultMembers...) {
				return nil, false
			}
		}
	}
	if content == nil {
		return nil, false
	}
	res := &mcp.CallToolResult{IsError: isError}
	for item := range jsonscan.Elements(content) {
		t, ok := textItem(item)
		if !ok {
			return nil, false
		}
		res.Content = append(res.Content, t)
	}
	if structured != nil {
		res.RawStructuredContent = bytes.Clone(structured)
	}
	return res, true
}

// textItem takes a text item without annotations or _meta.
func textItem(item []byte) (mcp.TextContent, bool) {
	t := mcp.TextContent{}
	if item[0] != '{' {
		return t, false
	}
	var seen uint8
	for key, val := range jsonscan.Members(item) {
		switch string(key) {
		case "type":
			if s, ok := jsonscan.Plain(val); !ok || seen&1 != 0 || string(s) != mcp.ContentTypeText {
				return t, false
			}
			seen |= 1
			t.Type = mcp.ContentTypeText
		case "text":
			if seen&2 != 0 {
				return t, false
			}
			seen |= 2
			switch val[0] {
			case '"':
				t.Text = jsonscan.Unquote(val[1 : len(val)-1])
			case 'n':
			default:
				return t, false
			}
		default:
			if jsonscan.MayName(key, textMembers...) {
				return t, false
			}
		}
	}
	return t, seen&1 != 0
}
