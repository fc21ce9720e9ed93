package web

import (
	"encoding/json"
	"time"

	"github.com/elysia-go/elysia/tree"
)

// This file holds the bodies web answers with, less their "error" field,
// which the handlers add. web owns them: they are the wire format of
// DESIGN.md ("HTTP API" and its appendix), whatever the types behind them.

// ServersStatus is the body of GET /api/servers.
type ServersStatus struct {
	// ConfigFile is the path of the mcp.json in use.
	ConfigFile string `json:"config_file"`
	// ConfigError is the last reload's error, "" when the file is valid.
	ConfigError string `json:"config_error"`
	// Servers is one entry per configured server, in file order. Nil is
	// sent as [].
	Servers []ServerStatus `json:"servers"`
}

// ServerStatus is one server of GET /api/servers: its gateway's state and
// its configuration as written, secrets masked.
type ServerStatus struct {
	Name      string `json:"name"`
	ToolName  string `json:"tool_name"`
	Transport string `json:"transport"`
	Enabled   bool   `json:"enabled"`
	// State is idle, connecting, connected, degraded, failed or disabled.
	State     string   `json:"state"`
	ToolCount int      `json:"tool_count"`
	Tools     []string `json:"tools"`
	LastError string   `json:"last_error"`
	Circuit   Circuit  `json:"circuit"`
	Calls     int64    `json:"calls"`
	Failures  int64    `json:"failures"`
	// RetryAt is when a server in back-off is tried again; nil when none.
	RetryAt *time.Time `json:"retry_at,omitempty"`
	// PID is a running stdio server's process id; 0 when none.
	PID int `json:"pid,omitempty"`
	// ProtocolVersion is the MCP version the server's live session
	// negotiated (2026-07-28, 2025-11-25, ...); "" when none is live.
	ProtocolVersion string `json:"protocol_version,omitempty"`
	// MissingSecrets, in a status for one user, names the secrets of
	// that user's own the server takes (${user:NAME}) and the user has
	// not set; the state is then needs_sign_in. Nil otherwise.
	MissingSecrets []string `json:"missing_secrets,omitempty"`
	// Pin is the server's "pin" mode: block, warn or off ("" when the
	// service keeps no pins).
	Pin string `json:"pin,omitempty"`
	// ToolChanges are the tools whose definitions are not the pinned
	// ones: held back until approved, or (Held false, "pin": "warn") let
	// through with a warning. Nil when every tool matches its pin.
	ToolChanges []ToolChange `json:"tool_changes,omitempty"`
	// DiffersByUser names the tools the server gave different users in
	// different definitions; nil when none.
	DiffersByUser []string `json:"differs_by_user,omitempty"`
	// Policy, Serving and Copies describe a server with copies (mcp.json
	// "copies"): priority or round_robin, the copies that take calls now
	// ("copy 2"; "" when none can), and every copy. Empty otherwise.
	Policy  string       `json:"policy,omitempty"`
	Serving string       `json:"serving,omitempty"`
	Copies  []ServerCopy `json:"copies,omitempty"`

	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Cwd     string            `json:"cwd,omitempty"`
	URL     string            `json:"url,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`

	Description string `json:"description,omitempty"`
	Branch      string `json:"branch,omitempty"`
	// Unresolved says why the server cannot run (an input or variable
	// without a value); "" when it can.
	Unresolved string `json:"unresolved,omitempty"`
	// Renamed maps the server's tools that the aggregate MCP endpoint
	// lists under another name than <prefix>__<tool> (the name was taken
	// by an earlier tool) to that name; nil when none.
	Renamed map[string]string `json:"renamed,omitempty"`
}

// ServerCopy is one copy of a server with copies.
type ServerCopy struct {
	// Copy is its number, 1 for the server's own keys; Label is "copy N".
	Copy  int    `json:"copy"`
	Label string `json:"label"`
	// Transport is stdio, http or sse; Where its URL or command line as
	// written in mcp.json, masked.
	Transport string `json:"transport"`
	Where     string `json:"where"`
	// State is its session's state, failed while it is down.
	State string `json:"state"`
	// Serving is set on the copies that take calls now; Down while calls
	// fail over from it, since DownSince.
	Serving   bool       `json:"serving"`
	Down      bool       `json:"down"`
	DownSince *time.Time `json:"down_since,omitempty"`
	Circuit   Circuit    `json:"circuit"`
	Calls     int64      `json:"calls"`
	Failures  int64      `json:"failures"`
	LastError string     `json:"last_error,omitempty"`
}

// ToolChange is a tool whose definition is not the one pinned (approved).
type ToolChange struct {
	Name string `json:"name"`
	// Change is "new" or "changed"; Reason says what changed.
	Change string `json:"change"`
	Reason string `json:"reason"`
	// Old is the pinned definition, JSON ("" for a new tool); New the
	// one the server lists now.
	Old string `json:"old,omitempty"`
	New string `json:"new"`
	// Held is true while the tool is held back until approved.
	Held bool `json:"held"`
	// PinnedAt is when Old was pinned; nil for a new tool.
	PinnedAt *time.Time `json:"pinned_at,omitempty"`
}

// Circuit is a server's circuit breaker.
type Circuit struct {
	// State is closed, open or half-open.
	State string `json:"state"`
	// RetryAt is when an open circuit lets a trial call through; nil
	// otherwise.
	RetryAt *time.Time `json:"retry_at"`
}

// ToolPage is the result of POST /api/servers/:name/list: one page of a
// server's tools.
type ToolPage struct {
	Server     string     `json:"server"`
	Tools      []ToolInfo `json:"tools"`
	Total      int        `json:"total"`
	NextCursor string     `json:"next_cursor"`
	// Stale and LastError say the page comes from the cache of a server
	// that cannot be used now, and why.
	Stale     bool   `json:"stale,omitempty"`
	LastError string `json:"last_error,omitempty"`
}

// ToolInfo is one tool of a server, with its schemas exactly as the server
// sent them.
type ToolInfo struct {
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	Inputs       json.RawMessage `json:"inputs"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
}

// ExecuteResult is the result of POST /api/servers/:name/execute: the MCP
// tool's result as DESIGN.md shows it.
type ExecuteResult struct {
	IsError    bool             `json:"is_error"`
	Content    []map[string]any `json:"content"`
	Structured any              `json:"structured"`
}

// ResourceInfo is one resource or resource template of POST
// /api/servers/:name/resources.
type ResourceInfo struct {
	// URI is a resource's; URITemplate a template's (RFC 6570).
	URI         string `json:"uri,omitempty"`
	URITemplate string `json:"uri_template,omitempty"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	MIMEType    string `json:"mime_type,omitempty"`
}

// PromptInfo is one prompt of POST /api/servers/:name/prompts.
type PromptInfo struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Arguments are the prompt's; nil is sent as null.
	Arguments []PromptArgument `json:"arguments"`
}

// PromptArgument is one argument of a prompt.
type PromptArgument struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required"`
}

// PromptMessage is one message of POST /api/servers/:name/prompts/get: a
// content item (text, image, audio, resource) with its role, capped like
// an execute result.
type PromptMessage struct {
	Role    string         `json:"role"`
	Content map[string]any `json:"content"`
}

// LogEntry is one log message (notifications/message) of GET
// /api/servers/:name/logs, masked and cut by the gateway.
type LogEntry struct {
	Time   time.Time `json:"time"`
	Level  string    `json:"level"`
	Logger string    `json:"logger,omitempty"`
	Data   string    `json:"data"`
	// User is whom the message belongs to; "" when nobody's (shown to
	// admins only).
	User string `json:"user,omitempty"`
}

// ModelInfo names the model that makes the decisions, for the user config
// (POST /init/user and the /user/config routes).
type ModelInfo struct {
	// Provider is the provider (openai, anthropic, ollama, googleai,
	// offline).
	Provider string `json:"provider"`
	// Model is the model name sent to the provider.
	Model string `json:"model"`
	// BaseURL is the server the provider talks to; "" for the default.
	BaseURL string `json:"base_url,omitempty"`
}

// conversationEntry is one element of GET /conversations/:user.
type conversationEntry struct {
	ConversationID string `json:"conversation_id"`
	Title          string `json:"title"`
	UpdatedAt      string `json:"updated_at"`
}

// savedConversation is the conversation of GET /conversations/:user/:conv.
type savedConversation struct {
	ConversationID string              `json:"conversation_id"`
	Title          string              `json:"title"`
	InitMode       string              `json:"init_mode"`
	History        []tree.Message      `json:"history"`
	Tree           json.RawMessage     `json:"tree"`
	Events         []json.RawMessage   `json:"events"`
	UpdatedAt      string              `json:"updated_at"`
	Environment    any                 `json:"environment"`
	Queries        []map[string]string `json:"queries"`
}

// wireTime formats t as DESIGN.md's examples do, RFC 3339 in UTC to the
// second ("2026-11-22T10:00:00Z"): the same instant reads the same whether
// it comes from memory (nanoseconds) or the store (microseconds). The zero
// time, a conversation never saved, is "".
func wireTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
