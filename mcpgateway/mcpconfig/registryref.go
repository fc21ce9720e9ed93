package mcpconfig

// RegistryRef is a server entry's "registry" block: the MCP Registry server
// it was added from (`elysia mcp add`), so that `elysia mcp update` can say
// what is newer. It is metadata: the gateway does not read it.
type RegistryRef struct {
	// Name is the server's name in the registry ("io.github.user/weather").
	Name string `json:"name"`
	// Version is the version the entry was written from.
	Version string `json:"version"`
}

// equalRegistry reports whether a and b are the same reference (both nil
// counts as equal).
func equalRegistry(a, b *RegistryRef) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// registry reads "registry": {"name": ..., "version": ...}, both non-empty
// strings.
func (sp *serverParse) registry(v *jnode) {
	p, name := sp.p, sp.name
	if !p.is(v, jObject, name, "registry") {
		return
	}
	var ref RegistryRef
	for _, m := range v.members {
		var dst *string
		switch m.key {
		case "name":
			dst = &ref.Name
		case "version":
			dst = &ref.Version
		default:
			p.warnAt(m.keyOff, name, "unknown key %q in registry ignored (want name and version)", m.key)
			continue
		}
		if !p.is(m.val, jString, name, "registry."+m.key) {
			return
		}
		if m.val.str == "" {
			p.errAt(m.val.off, name, "registry.%s is empty", m.key)
			return
		}
		*dst = m.val.str
	}
	if ref.Name == "" || ref.Version == "" {
		p.errAt(v.off, name, `registry needs "name" and "version"`)
		return
	}
	sp.s.Registry = &ref
}
