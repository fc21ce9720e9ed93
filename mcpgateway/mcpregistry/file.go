package mcpregistry

import (
	"fmt"
	"os"

	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// CheckAbsent returns an error matching mcpconfig.ErrServerExists when the
// mcp.json at path has a server called name. A missing file has none; a
// file that cannot be read or parsed is left for the edit to report.
func CheckAbsent(path, name string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	if e, err := mcpconfig.NewEdit(path, data); err == nil && e.Has(name) {
		return fmt.Errorf("%s: server %q: %w", path, name, mcpconfig.ErrServerExists)
	}
	return nil
}

// AddTo appends the entry to the mcp.json at path with mcpconfig.EditFile,
// keeping the file's comments and layout (a missing file is created). A
// file that already has a server of the entry's name is an error matching
// mcpconfig.ErrServerExists; nothing is written then, nor when the file
// would become invalid or changed meanwhile (see EditFile).
func (e *Entry) AddTo(path string) error {
	return mcpconfig.EditFile(path, func(ed *mcpconfig.Edit) error { return ed.Add(e.Name, e.JSON()) })
}
