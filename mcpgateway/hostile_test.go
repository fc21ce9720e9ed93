package mcpgateway

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// hostileEnv, set in a child's environment, makes the test binary a
// hostile stdio MCP server (hostileServer) instead of running the tests.
const hostileEnv = "ELYSIA_TEST_HOSTILE_MCP"

// runHostileServer serves as a hostile MCP server and exits when the
// binary was started as one (TestMain calls it first); otherwise it
// returns.
func runHostileServer() {
	mode, ok := os.LookupEnv(hostileEnv)
	if !ok {
		return
	}
	h := &hostileServer{in: bufio.NewScanner(os.Stdin), out: bufio.NewWriter(os.Stdout), mode: mode, got: map[string]rpcMessage{}}
	h.in.Buffer(make([]byte, 64<<10), 16<<20)
	h.serve()
	os.Exit(0)
}

// hostileConfig is a stdio server running the test binary as a hostile
// server in mode ("" or "sample-at-start": it asks for sampling as soon
// as the handshake is done, with no call in flight).
func hostileConfig(t *testing.T, mode string) mcpconfig.ServerConfig {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return mcpconfig.ServerConfig{Name: "hostile", Transport: mcpconfig.TransportStdio, Command: exe, Enabled: true,
		Env: map[string]string{hostileEnv: mode}}
}

// rpcMessage is any JSON-RPC message.
type rpcMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// hostileServer speaks raw JSON-RPC over stdio, one message at a time. Its
// tools: sample {n, size, system} asks for sampling n times in a row
// during the call, each with a user message of size bytes, and answers
// with one line per request ("ok: <text>" or "error: <message>"); early
// answers with the outcome of the request sent at the start.
type hostileServer struct {
	in   *bufio.Scanner
	out  *bufio.Writer
	mode string
	seq  int
	got  map[string]rpcMessage // answers to the server's requests, by id
}

func (h *hostileServer) send(v any) {
	b, _ := json.Marshal(v)
	_, _ = h.out.Write(append(b, '\n'))
	if h.out.Flush() != nil { // the gateway is gone
		os.Exit(0)
	}
}

func (h *hostileServer) serve() {
	for h.in.Scan() {
		var m rpcMessage
		if json.Unmarshal(h.in.Bytes(), &m) == nil {
			h.handle(m)
		}
	}
}

// handle answers a request or keeps an answer.
func (h *hostileServer) handle(m rpcMessage) {
	if m.Method == "" {
		h.got[string(m.ID)] = m
		return
	}
	result := func(v any) { h.send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": v}) }
	switch m.Method {
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(m.Params, &p)
		result(map[string]any{"protocolVersion": p.ProtocolVersion, "capabilities": map[string]any{"tools": map[string]any{}},
			"serverInfo": map[string]any{"name": "hostile", "version": "1"}})
	case "notifications/initialized":
		if h.mode == "sample-at-start" {
			// Nothing else is answered before the gateway answers this:
			// no call can be in flight meanwhile.
			h.ask(`"early"`, "at start", 0)
			var held []rpcMessage
			for {
				if _, ok := h.got[`"early"`]; ok {
					break
				}
				m := h.read()
				if m.Method == "" {
					h.got[string(m.ID)] = m
				} else {
					held = append(held, m)
				}
			}
			for _, m := range held {
				h.handle(m)
			}
		}
	case "ping":
		result(map[string]any{})
	case "tools/list":
		obj := map[string]any{"type": "object"}
		result(map[string]any{"tools": []any{
			map[string]any{"name": "sample", "inputSchema": obj},
			map[string]any{"name": "early", "inputSchema": obj},
		}})
	case "tools/call":
		var p struct {
			Name      string `json:"name"`
			Arguments struct {
				N      int    `json:"n"`
				Size   int    `json:"size"`
				System string `json:"system"`
			} `json:"arguments"`
		}
		_ = json.Unmarshal(m.Params, &p)
		var lines []string
		switch p.Name {
		case "sample":
			for range p.Arguments.N {
				h.seq++
				id := fmt.Sprintf(`"s%d"`, h.seq)
				h.ask(id, strings.Repeat("x", p.Arguments.Size), len(p.Arguments.System))
				lines = append(lines, h.outcome(h.await(id)))
			}
		case "early":
			lines = append(lines, h.outcome(h.await(`"early"`)))
		}
		result(map[string]any{"content": []any{map[string]any{"type": "text", "text": strings.Join(lines, "\n")}}})
	default:
		// As JSON-RPC has it (server/discover among others): left
		// unanswered, the gateway's probe would wait for it.
		if len(m.ID) > 0 {
			h.send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "method not found"}})
		}
	}
}

// ask sends sampling/createMessage with id, text as the user's message and
// a system prompt of system bytes.
func (h *hostileServer) ask(id, text string, system int) {
	params := map[string]any{"messages": []any{map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": text}}},
		"maxTokens": 10}
	if system > 0 {
		params["systemPrompt"] = strings.Repeat("s", system)
	}
	h.send(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "method": "sampling/createMessage", "params": params})
}

// read returns the next message; at the end of stdin the server exits.
func (h *hostileServer) read() rpcMessage {
	for h.in.Scan() {
		var m rpcMessage
		if json.Unmarshal(h.in.Bytes(), &m) == nil {
			return m
		}
	}
	os.Exit(0)
	return rpcMessage{}
}

// await reads messages, handling requests, until the answer to id came.
func (h *hostileServer) await(id string) rpcMessage {
	for {
		if m, ok := h.got[id]; ok {
			return m
		}
		h.handle(h.read())
	}
}

// outcome is one line of the sample tool's answer.
func (h *hostileServer) outcome(m rpcMessage) string {
	if m.Error != nil {
		return "error: " + m.Error.Message
	}
	var r struct {
		Content struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	_ = json.Unmarshal(m.Result, &r)
	return "ok: " + r.Content.Text
}
