package tree

import "strings"

// Text renders the tree for a terminal (`elysia tree`): one line per node
// and option, 📁 for branches, 🔧 for tools, 💬 for descriptions, indented
// by depth. Tools followed by chained tools list them below.
func (t *Tree) Text() string {
	var b strings.Builder
	b.WriteString("📁 " + t.root.id + "\n")
	writeText(&b, t.root.options, 1)
	return b.String()
}

func writeText(b *strings.Builder, options []*option, depth int) {
	indent := strings.Repeat("   ", depth)
	for _, o := range options {
		icon := "🔧 "
		if o.isBranch() {
			icon = "📁 "
		}
		b.WriteString(indent + icon + o.id + "\n")
		if d := o.description(); d != "" {
			b.WriteString(indent + "   💬 " + oneLine(d) + "\n")
		}
		if o.next != nil {
			writeText(b, o.next.options, depth+1)
		}
	}
}

// oneLine collapses whitespace so a description stays on its line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
