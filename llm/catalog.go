package llm

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// maxCatalogueNames caps the tool names the catalogue answer gives per
// server; the rest are counted.
const maxCatalogueNames = 30

// catalogueWords ask what the service can do ("What tools do you have?").
var catalogueWords = map[string]bool{
	"tool": true, "tools": true, "capability": true, "capabilities": true, "ability": true,
	"abilities": true, "function": true, "functions": true, "help": true,
}

// catalogueFiller are the terms a catalogue question may hold besides its
// catalogue word: any other term asks for something in particular.
var catalogueFiller = map[string]bool{
	"have": true, "available": true, "list": true, "show": true, "use": true, "offer": true,
	"got": true, "know": true, "there": true, "tell": true, "give": true, "see": true,
	"doe": true, "does": true, "kind": true, "sort": true, "type": true, "exist": true,
	"support": true, "help": true, "capability": true, "ability": true, "function": true,
	"we": true, "were": true, "was": true, "here": true, "now": true, "currently": true,
}

// asksForCatalogue reports whether the prompt asks what the tools are
// rather than for a task: a catalogue word (or "what can you do"), and no
// other term but the names of servers. wants tells the gateways it asks
// about: those it names, else every one.
func (p *planner) asksForCatalogue() (wants func(gateway string) bool, ok bool) {
	ws := words(p.d.UserPrompt)
	if !slices.ContainsFunc(ws, func(w string) bool { return catalogueWords[w] }) &&
		(!slices.Contains(ws, "can") || !slices.Contains(ws, "do")) {
		return nil, false
	}
	var named []string
	for _, t := range terms(p.d.UserPrompt) {
		if !catalogueFiller[t] {
			named = append(named, t)
		}
	}
	if len(named) == 0 {
		return func(string) bool { return true }, true
	}
	servers := map[string]bool{}
	for _, f := range p.fns {
		if f.isGateway() {
			maps.Copy(servers, termSet(serverName(f)))
		}
	}
	for gateway := range p.d.Environment {
		maps.Copy(servers, termSet(p.server(gateway)))
	}
	for _, t := range named {
		if !servers[t] {
			return nil, false // a term of a task, not a server's name
		}
	}
	return func(gateway string) bool {
		name := termSet(p.server(gateway))
		return slices.ContainsFunc(named, func(t string) bool { return name[t] })
	}, true
}

// catalogue lists, one at a time, every gateway wanted and not yet listed
// in this run, then answers with what they listed.
func (p *planner) catalogue(gateways []function, wants func(string) bool) choice {
	for _, g := range gateways {
		if wants(g.name) && !p.triedListing(g.name) {
			return p.list(g)
		}
	}
	return p.answer()
}

// triedListing reports whether gateway has listed, or tried to, in this
// run: a server with no tools, or one whose list failed, is not listed
// again.
func (p *planner) triedListing(gateway string) bool {
	if p.d.hasListed(gateway) || len(p.d.errorsFor(gateway)) > 0 {
		return true
	}
	for _, t := range p.d.TasksCompleted {
		if t.Tool == gateway && t.Inputs[gatewayAction] == actionList {
			return true
		}
	}
	return false
}

// catalogueText is the answer to a catalogue question: each wanted
// server's tools on a line of its own, servers in the order they were
// listed; "" when no such server listed or failed to.
func (p *planner) catalogueText(wants func(string) bool) string {
	var order []string
	seen := map[string]bool{}
	add := func(gateway string) {
		if gateway != "" && !seen[gateway] && wants(gateway) {
			seen[gateway] = true
			order = append(order, gateway)
		}
	}
	for _, t := range p.d.TasksCompleted {
		if t.Inputs[gatewayAction] == actionList {
			add(t.Tool)
		}
	}
	for _, gateway := range slices.Sorted(maps.Keys(p.d.Environment)) {
		if p.d.hasListed(gateway) {
			add(gateway)
		}
	}
	if len(order) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(Prefix + " The tools I can use, by server:")
	for _, gateway := range order {
		tools := p.d.listedTools(gateway)
		fmt.Fprintf(&b, "\n- %s", p.server(gateway))
		switch errs := p.d.errorsFor(gateway); {
		case len(tools) > 0:
			fmt.Fprintf(&b, " (%d %s): ", len(tools), plural(len(tools), "tool"))
			for i, t := range tools {
				if i == maxCatalogueNames {
					fmt.Fprintf(&b, " and %d more", len(tools)-i)
					break
				}
				if i > 0 {
					b.WriteString(", ")
				}
				b.WriteString(t.name)
			}
		case len(errs) > 0:
			fmt.Fprintf(&b, ": could not be listed: %s", errs[len(errs)-1].ErrorMessage)
		default:
			b.WriteString(": no tools")
		}
	}
	return b.String()
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// gatewayServer reads the server's name from a gateway's description,
// "MCP server '<name>' (...)".
var gatewayServer = regexp.MustCompile(`^MCP server '([^']+)'`)

// serverName is how a person knows f's server: its name in mcp.json, from
// the gateway's description, else the gateway's tool name without "mcp_".
func serverName(f function) string {
	if m := gatewayServer.FindStringSubmatch(f.description); m != nil {
		return m[1]
	}
	return strings.TrimPrefix(f.name, "mcp_")
}

// server is serverName of the offered option named gateway; a gateway no
// longer offered is named by its tool name without "mcp_".
func (p *planner) server(gateway string) string {
	for _, f := range p.fns {
		if f.name == gateway {
			return serverName(f)
		}
	}
	return strings.TrimPrefix(gateway, "mcp_")
}

// available names the tools listed so far, else the options offered.
func (p *planner) available() string {
	var names []string
	for _, gateway := range slices.Sorted(maps.Keys(p.d.Environment)) {
		for _, t := range p.d.listedTools(gateway) {
			names = append(names, t.name)
		}
	}
	if len(names) == 0 {
		for _, f := range p.fns {
			if f.name != answerTool {
				names = append(names, f.name)
			}
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// capText cuts s to maxAnswer runes, at the last space of the final
// tenth when there is one, so that no word is cut in half.
func capText(s string) string {
	r := []rune(s)
	if len(r) <= maxAnswer {
		return s
	}
	cut := maxAnswer
	for i := maxAnswer; i > maxAnswer*9/10; i-- {
		if unicode.IsSpace(r[i]) {
			cut = i
			break
		}
	}
	return strings.TrimRightFunc(string(r[:cut]), func(c rune) bool { return unicode.IsSpace(c) || c == ',' }) + "… (cut)"
}
