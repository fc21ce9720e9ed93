package main

import (
	"bytes"
	"flag"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/elysia-go/elysia/internal/textdist"
	"github.com/elysia-go/elysia/mcpgateway/mcpregistry"
)

// version is elysia's version; a release build sets it with
// -ldflags "-X main.version=...".
var version = "0.1.0"

// versionText is what --version prints: the version, the commit the binary
// was built from when known, and the Go version.
func versionText() string {
	s := "elysia " + version
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, kv := range bi.Settings {
			if kv.Key == "vcs.revision" && len(kv.Value) >= 12 {
				s += " (" + kv.Value[:12] + ")"
			}
		}
	}
	return s + " " + runtime.Version() + "\n"
}

// command is one command line of elysia, for its help.
type command struct {
	name     string // "mcp call"
	args     string // the positional arguments, as in the synopsis
	summary  string // one line, for the command list
	detail   string // what it does, a paragraph
	examples []string
}

// commands are elysia's commands, in the order the help lists them.
var commands = []command{
	{name: "serve", summary: "serve the HTTP API and web UI",
		detail: "Serves the API, the web UI, the event streams and the aggregate MCP endpoint (/mcp, /sse) until Ctrl-C\n" +
			"or SIGTERM, then lets running queries finish.\n" + endpointEnvHelp(),
		examples: []string{"elysia serve", "elysia serve --addr 127.0.0.1:9000 --db ./data/elysia.db"}},
	{name: "query", args: "QUERY...", summary: "run the agent on one query in the terminal",
		detail: "Runs the agent on one query and prints each event as it comes. A server's question is asked on the\n" +
			"terminal. Exits 1 when the run ends with an error or its last tool call failed.",
		examples: []string{`elysia query "list my todos"`, `elysia query --json "create a todo titled milk"`}},
	{name: "tree", summary: "print the decision tree with the configured gateways",
		detail:   "Prints a new conversation's decision tree with one gateway per configured server. Connects to nothing.",
		examples: []string{"elysia tree", "elysia tree --mode multi_branch"}},
	{name: "mcp list", args: "[SERVER]", summary: "summarise every server, or list one server's tools",
		detail:   "Without SERVER, summarises every configured server (connecting to none); with SERVER, connects to it and\nlists its tools with their parameters (* = required).",
		examples: []string{"elysia mcp list", "elysia mcp list todo"}},
	{name: "mcp call", args: "SERVER TOOL ['JSON']", summary: "execute one tool of a server",
		detail: "Calls TOOL of SERVER with the JSON object of inputs (default {}) and prints its result; progress goes to\n" +
			"stderr and the server's questions are asked on the terminal. Exits 1 when the tool fails, 2 when the\n" +
			"server has no such TOOL (naming the closest one).",
		examples: []string{"elysia mcp call todo list_todos", `elysia mcp call todo create_todo '{"title": "milk", "priority": 2}'`}},
	{name: "mcp login", args: "SERVER", summary: "sign in to a server (user $ELYSIA_USER, default cli)",
		detail:   "Signs the CLI's user in to an HTTP or SSE server that takes OAuth, and keeps the token in the token file\n($ELYSIA_TOKEN_FILE). A stdio server takes no sign-in.",
		examples: []string{"elysia mcp login github", "elysia mcp login github --browser print"}},
	{name: "mcp logout", args: "SERVER", summary: "forget the sign-in to a server",
		detail:   "Revokes and forgets the CLI user's token for SERVER. A stdio server takes no sign-in.",
		examples: []string{"elysia mcp logout github"}},
	{name: "mcp serve", summary: "serve every server as one MCP server on stdio",
		detail: "Speaks MCP on stdin and stdout for a client that starts a command (Claude Desktop, Cursor, VS Code):\n" +
			"every configured server's tools, listed as mcp.json's \"expose\" block says, and the agent as the ask\n" +
			"tool. The log goes to stderr.\n" + endpointEnvHelp(),
		examples: []string{"elysia mcp serve", "ELYSIA_USER=alice elysia mcp serve --config ./mcp.json"}},
	{name: "mcp search", args: "WORDS...", summary: "find servers in the MCP Registry",
		detail: "Lists the servers of the registry at $" + registryURLEnv + " (default " + mcpregistry.DefaultURL + ")\n" +
			"whose name holds the longest word and whose name, title or description holds every word: name, latest\n" +
			"version, how it runs (remote, npm, pypi, oci) and description.",
		examples: []string{"elysia mcp search github", "elysia mcp search weather forecast --limit 5"}},
	{name: "mcp add", args: "NAME[@VERSION]", summary: "add a server from the MCP Registry to mcp.json",
		detail: "Writes one entry for the registry server NAME (its latest version, or VERSION) into mcp.json, keeping the\n" +
			"file's comments and layout: its remote (Streamable HTTP, then SSE) with its headers, else its package run\n" +
			"over stdio (npm: npx -y, PyPI: uvx, OCI: docker run -i --rm) with its arguments and environment. A secret\n" +
			"becomes an ${input:...} password input (ELYSIA_INPUT_<ID>, or asked by elysia serve on a terminal), or\n" +
			"with --per-user-secrets a ${user:...} secret each user sets. A required value without a default is asked\n" +
			"for on a terminal, or give it with --set. A running elysia serve picks the entry up. Exits 2 when the name\n" +
			"is taken or a value is missing, 1 when the registry fails or its server.json is refused; nothing is written.",
		examples: []string{"elysia mcp add io.github.modelcontextprotocol/everything",
			"elysia mcp add com.example/weather@1.2.0 --name weather --per-user-secrets",
			"elysia mcp add io.github.example/db --set DB_HOST=localhost"}},
	{name: "mcp update", args: "[SERVER]", summary: "update servers added from the MCP Registry",
		detail: "Says, for SERVER or every server added with mcp add, whether the registry has a newer version, and\n" +
			"rewrites that entry for it: only its type, command, args, env, url, headers, inputs and registry keys;\n" +
			"values given before are kept. --dry-run only says.",
		examples: []string{"elysia mcp update", "elysia mcp update weather --dry-run"}},
	{name: "mcp remove", args: "SERVER", summary: "remove a server from mcp.json",
		detail:   "Removes the entry of SERVER from mcp.json with its comments, leaving the rest of the file as it is.",
		examples: []string{"elysia mcp remove weather"}},
	{name: "mcp pins", args: "[list|approve|reset] SERVER [TOOL...]", summary: "review a server's pinned tools",
		detail: "The first listing of a server pins each tool's definition in the database (--db, as elysia serve); a tool\n" +
			"whose definition changed since, or that is new, is held back (\"pin\": \"block\") until approved. list (the\n" +
			"default) connects to SERVER and shows its pins and what changed, old and new; approve pins the current\n" +
			"definitions of the TOOLs (default: every one waiting), exiting 2 when nothing waits; reset forgets the\n" +
			"server's pins, so its next listing pins afresh. A running elysia serve takes an approval in within a minute.",
		examples: []string{"elysia mcp pins github", "elysia mcp pins approve github create_issue", "elysia mcp pins reset github"}},
	{name: "config check", args: "[FILE]", summary: "validate an mcp.json",
		detail:   "Checks FILE (default --config) and lists its servers; a bad file exits 2 with file:line:col.",
		examples: []string{"elysia config check", "elysia config check ./other/mcp.json"}},
}

// usage is the help of elysia as a whole.
func usage() string {
	var b strings.Builder
	b.WriteString("usage: elysia <command> [flags] [arguments]\n\ncommands:\n")
	writeCommands(&b, "")
	b.WriteString(`
every command takes --config FILE (default ./mcp.json), before or after the
command; flags may follow the arguments, and -- ends the flags.
elysia <command> --help describes a command; elysia --version prints the version.

exit codes: 0 success, 1 a tool or server failure, 2 usage or config error,
130 interrupted (Ctrl-C)
`)
	return b.String()
}

// groupUsage is the help of a command group ("mcp", "config").
func groupUsage(group string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: elysia %s <command> [flags] [arguments]\n\ncommands:\n", group)
	writeCommands(&b, group+" ")
	fmt.Fprintf(&b, "\nelysia %s <command> --help describes a command.\n", group)
	return b.String()
}

// writeCommands lists the commands whose name starts with prefix.
func writeCommands(b *strings.Builder, prefix string) {
	for _, c := range commands {
		if !strings.HasPrefix(c.name, prefix) {
			continue
		}
		head := strings.TrimSpace(c.name + " " + c.args)
		if len(head) > 24 {
			fmt.Fprintf(b, "  %s\n  %-24s  %s\n", head, "", c.summary)
			continue
		}
		fmt.Fprintf(b, "  %-24s  %s\n", head, c.summary)
	}
}

// commandHelp is the help of one command: its synopsis, what it does,
// examples and fs's flags.
func commandHelp(name string, fs *flag.FlagSet) string {
	var b strings.Builder
	c := findCommand(name)
	fmt.Fprintf(&b, "usage: elysia %s [flags] %s\n\n", name, c.args)
	if c.detail != "" {
		fmt.Fprintf(&b, "%s\n\n", c.detail)
	}
	if len(c.examples) > 0 {
		b.WriteString("example:\n")
		for _, e := range c.examples {
			fmt.Fprintf(&b, "  %s\n", e)
		}
		b.WriteString("\n")
	}
	b.WriteString("flags:\n")
	var defaults bytes.Buffer
	out := fs.Output()
	fs.SetOutput(&defaults)
	fs.PrintDefaults()
	fs.SetOutput(out)
	b.Write(defaults.Bytes())
	return b.String()
}

func findCommand(name string) command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return command{name: name}
}

// helpError asks run to print text on stdout and exit 0: the user asked
// for help.
type helpError struct{ text string }

func (e *helpError) Error() string { return "help requested" }

// Unwrap makes a helpError match flag.ErrHelp.
func (e *helpError) Unwrap() error { return flag.ErrHelp }

// suggest returns ` (did you mean "X"?)` for the candidate closest to
// typed, or "" when none is within two edits.
func suggest(typed string, candidates []string) string {
	best, bestD := "", 3
	for _, c := range candidates {
		if d := textdist.Distance(typed, c); d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// subcommands returns the names of a group's commands without the group
// ("list", "call", ...), or the top-level words for group "".
func subcommands(group string) []string {
	var out []string
	for _, c := range commands {
		name := c.name
		if group != "" {
			var ok bool
			if name, ok = strings.CutPrefix(name, group+" "); !ok {
				continue
			}
		} else {
			name, _, _ = strings.Cut(name, " ")
		}
		if len(out) == 0 || out[len(out)-1] != name {
			out = append(out, name)
		}
	}
	return out
}
