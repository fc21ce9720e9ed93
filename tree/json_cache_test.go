package tree

import (
	"strings"
	"testing"
)

// TestTreeJSONFollowsDescriptions checks the rendered-JSON cache: a
// gateway's description changes once it has listed its tools, and tree
// operations change the structure; both must show in the next render.
func TestTreeJSONFollowsDescriptions(t *testing.T) {
	g := gateway("todo")
	tr, _ := New(OneBranch, nil)
	if err := tr.AddTool(g, "", nil, true); err != nil {
		t.Fatal(err)
	}
	first, _ := tr.MarshalJSON()
	again, _ := tr.MarshalJSON()
	if &first[0] != &again[0] {
		t.Error("an unchanged tree was rendered again instead of served from the cache")
	}

	g.desc += ". Tools: create_todo"
	b, _ := tr.MarshalJSON()
	if !strings.Contains(string(b), "Tools: create_todo") {
		t.Errorf("a changed description is missing from the JSON:\n%s", b)
	}

	if err := tr.AddBranch("notes", "Notes", "", "", true); err != nil {
		t.Fatal(err)
	}
	b, _ = tr.MarshalJSON()
	if !strings.Contains(string(b), `"notes":{"name":"Notes"`) {
		t.Errorf("an added branch is missing from the JSON:\n%s", b)
	}
	c := tr.Clone()
	if err := c.RemoveBranch("notes"); err != nil {
		t.Fatal(err)
	}
	if b, _ := c.MarshalJSON(); strings.Contains(string(b), `"notes"`) {
		t.Error("a clone served its original's cached JSON")
	}
	if b, _ := tr.MarshalJSON(); !strings.Contains(string(b), `"notes"`) {
		t.Error("changing a clone changed the original's JSON")
	}
}
