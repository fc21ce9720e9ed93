package sessions

import (
	"os"
	"strings"
	"testing"
)

// TestDocListsEveryKind: mcpendpoint's table of the messages between
// replicas (its doc.go) names every kind the Hub receives.
func TestDocListsEveryKind(t *testing.T) {
	doc, err := os.ReadFile("../../doc.go")
	if err != nil {
		t.Fatal(err)
	}
	for kind := range receivers {
		if !strings.Contains(string(doc), "//\t"+kind+" ") {
			t.Errorf("doc.go's table has no row of %s", kind)
		}
	}
}
