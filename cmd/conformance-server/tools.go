package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// step is the pause between the log messages and the progress
// notifications of one call, as the scenarios describe (~50 ms).
const step = 50 * time.Millisecond

// pngData and wavData are base64 media: a 1x1 red PNG and 10 ms of
// silent 8 kHz 8-bit mono WAV.
var pngData, wavData = redPixel(), silence()

func redPixel() string {
	img := image.NewRGBA(image.Rect(0, 0, 1, 1))
	img.Set(0, 0, color.RGBA{R: 255, A: 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		panic(err) // an in-memory encode of a valid image
	}
	return base64.StdEncoding.EncodeToString(b.Bytes())
}

func silence() string {
	const rate, n = 8000, 80
	var b bytes.Buffer
	b.WriteString("RIFF")
	_ = binary.Write(&b, binary.LittleEndian, uint32(36+n))
	b.WriteString("WAVEfmt ")
	for _, v := range []any{uint32(16), uint16(1), uint16(1), uint32(rate), uint32(rate), uint16(1), uint16(8)} {
		_ = binary.Write(&b, binary.LittleEndian, v) // bytes.Buffer writes do not fail
	}
	b.WriteString("data")
	_ = binary.Write(&b, binary.LittleEndian, uint32(n))
	b.Write(bytes.Repeat([]byte{128}, n))
	return base64.StdEncoding.EncodeToString(b.Bytes())
}

// text is a tool result of one text.
func text(s string) *mcp.CallToolResult { return mcp.NewToolResultText(s) }

// content is a tool result of the given content.
func content(c ...mcp.Content) *mcp.CallToolResult { return &mcp.CallToolResult{Content: c} }

// sleep waits d or ctx.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// addTools registers every test_* tool.
func addTools(s *mcpserver.MCPServer, out *sentWriter) {
	noArgs := func(name, desc string, h func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error)) {
		s.AddTool(mcp.NewTool(name, mcp.WithDescription(desc)), h)
	}
	noArgs("test_simple_text", "Returns a simple text", func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text("This is a simple text response for testing."), nil
	})
	noArgs("test_image_content", "Returns a 1x1 PNG", func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return content(mcp.NewImageContent(pngData, "image/png")), nil
	})
	noArgs("test_audio_content", "Returns a short WAV", func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return content(mcp.NewAudioContent(wavData, "audio/wav")), nil
	})
	noArgs("test_embedded_resource", "Returns an embedded text resource", func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return content(mcp.NewEmbeddedResource(mcp.TextResourceContents{
			URI: "test://embedded-resource", MIMEType: "text/plain", Text: "This is an embedded resource content.",
		})), nil
	})
	noArgs("test_multiple_content_types", "Returns text, an image and a resource", func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return content(mcp.NewTextContent("Multiple content types test:"), mcp.NewImageContent(pngData, "image/png"),
			mcp.NewEmbeddedResource(mcp.TextResourceContents{
				URI: "test://mixed-content-resource", MIMEType: "application/json", Text: `{"test":"data","value":123}`,
			})), nil
	})
	noArgs("test_error_handling", "Always fails", func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultError("This tool intentionally returns an error for testing"), nil
	})
	noArgs("test_tool_with_logging", "Logs three messages at info while it runs", func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		srv := mcpserver.ServerFromContext(ctx)
		want := out.count()
		for i, msg := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
			if i > 0 {
				if err := sleep(ctx, step); err != nil {
					return nil, err
				}
			}
			sl, ok := mcpserver.ClientSessionFromContext(ctx).(mcpserver.SessionWithLogging)
			if !ok || !mcp.LoggingLevelInfo.ShouldSendTo(sl.GetLogLevel()) {
				continue // below the client's level: not sent
			}
			if srv.SendLogMessageToClient(ctx, mcp.NewLoggingMessageNotification(mcp.LoggingLevelInfo, "conformance", msg)) == nil {
				want++
			}
		}
		if err := out.await(ctx, want); err != nil {
			return nil, err
		}
		return text("Tool with logging executed successfully"), nil
	})
	noArgs("test_tool_with_progress", "Reports progress 0, 50, 100 of 100", func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		srv := mcpserver.ServerFromContext(ctx)
		var token mcp.ProgressToken
		if req.Params.Meta != nil {
			token = req.Params.Meta.ProgressToken
		}
		want := out.count()
		for i, p := range []int{0, 50, 100} {
			if i > 0 {
				if err := sleep(ctx, step); err != nil {
					return nil, err
				}
			}
			if token != nil && srv.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress),
				map[string]any{"progressToken": token, "progress": p, "total": 100}) == nil {
				want++
			}
		}
		if err := out.await(ctx, want); err != nil {
			return nil, err
		}
		return text("Tool with progress executed successfully"), nil
	})
	noArgs("test_reconnection", "Answers after a pause (the endpoint's stream may close and resume meanwhile)", func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if err := sleep(ctx, 20*step); err != nil { // past the stream_poll of the conformance test's config
			return nil, err
		}
		return text("Reconnection test completed successfully"), nil
	})
	s.AddTool(mcp.NewToolWithRawSchema("json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features", json.RawMessage(jsonSchema202012)),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("ok"), nil })
	addClientTools(s)
}

// jsonSchema202012 uses $schema, $defs and additionalProperties (SEP-1613),
// and $anchor, allOf/anyOf and if/then/else (SEP-2106), which a proxy must
// pass on unchanged.
const jsonSchema202012 = `{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
 "$defs": {"address": {"$anchor": "addressDef", "type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
 "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"},
  "contactMethod": {"type": "string", "enum": ["phone", "email"]}, "phone": {"type": "string"}, "email": {"type": "string"}},
 "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
 "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
 "then": {"required": ["phone"]}, "else": {"required": ["email"]},
 "additionalProperties": false}`

// addClientTools registers the tools that ask the client: sampling and
// elicitation.
func addClientTools(s *mcpserver.MCPServer) {
	s.AddTool(mcp.NewTool("test_sampling", mcp.WithDescription("Asks the client's model"),
		mcp.WithString("prompt", mcp.Required(), mcp.Description("The prompt to send to the LLM"))),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			srv := mcpserver.ServerFromContext(ctx)
			var cm mcp.CreateMessageRequest
			cm.Messages = []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent(req.GetString("prompt", ""))}}
			cm.MaxTokens = 100
			//lint:ignore SA1019 the 2025-11-25 protocol's sampling, which the scenario tests
			res, err := srv.RequestSampling(ctx, cm) //nolint:staticcheck // see above
			if err != nil {
				return mcp.NewToolResultError("sampling failed: " + err.Error()), nil
			}
			reply := ""
			if tc, ok := res.Content.(mcp.TextContent); ok {
				reply = tc.Text
			}
			return text("LLM response: " + reply), nil
		})
	elicit := func(ctx context.Context, message string, schema any) (*mcp.CallToolResult, error) {
		res, err := mcpserver.ServerFromContext(ctx).RequestElicitation(ctx, mcp.ElicitationRequest{
			Params: mcp.ElicitationParams{Message: message, RequestedSchema: schema},
		})
		if err != nil {
			return mcp.NewToolResultError("elicitation failed: " + err.Error()), nil
		}
		got, _ := json.Marshal(res.Content)
		return text(fmt.Sprintf("Elicitation completed: action=%s, content=%s", res.Action, got)), nil
	}
	s.AddTool(mcp.NewTool("test_elicitation", mcp.WithDescription("Asks the user for a username and an email"),
		mcp.WithString("message", mcp.Required(), mcp.Description("The message to show the user"))),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return elicit(ctx, req.GetString("message", ""), map[string]any{
				"type": "object",
				"properties": map[string]any{
					"username": map[string]any{"type": "string", "description": "User's response"},
					"email":    map[string]any{"type": "string", "description": "User's email address"},
				},
				"required": []string{"username", "email"},
			})
		})
	s.AddTool(mcp.NewTool("test_elicitation_sep1034_defaults", mcp.WithDescription("Asks with a default for every primitive type (SEP-1034)")),
		func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return elicit(ctx, "Please review and update the form fields with defaults", map[string]any{
				"type": "object",
				"properties": map[string]any{
					"name":     map[string]any{"type": "string", "description": "User name", "default": "John Doe"},
					"age":      map[string]any{"type": "integer", "description": "User age", "default": 30},
					"score":    map[string]any{"type": "number", "description": "User score", "default": 95.5},
					"status":   map[string]any{"type": "string", "description": "User status", "enum": []string{"active", "inactive", "pending"}, "default": "active"},
					"verified": map[string]any{"type": "boolean", "description": "Verification status", "default": true},
				},
			})
		})
	s.AddTool(mcp.NewTool("test_elicitation_sep1330_enums", mcp.WithDescription("Asks with every enum form (SEP-1330)")),
		func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			titled := func(pairs ...string) []map[string]any {
				var out []map[string]any
				for i := 0; i+1 < len(pairs); i += 2 {
					out = append(out, map[string]any{"const": pairs[i], "title": pairs[i+1]})
				}
				return out
			}
			return elicit(ctx, "Please choose options", map[string]any{
				"type": "object",
				"properties": map[string]any{
					"untitledSingle": map[string]any{"type": "string", "enum": []string{"option1", "option2", "option3"}},
					"titledSingle":   map[string]any{"type": "string", "oneOf": titled("value1", "First Option", "value2", "Second Option", "value3", "Third Option")},
					"legacyEnum": map[string]any{"type": "string", "enum": []string{"opt1", "opt2", "opt3"},
						"enumNames": []string{"Option One", "Option Two", "Option Three"}},
					"untitledMulti": map[string]any{"type": "array", "items": map[string]any{"type": "string", "enum": []string{"option1", "option2", "option3"}}},
					"titledMulti": map[string]any{"type": "array", "items": map[string]any{
						"anyOf": titled("value1", "First Choice", "value2", "Second Choice", "value3", "Third Choice")}},
				},
			})
		})
}
