package mcpendpoint

import (
	"os"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// TestReceiveIgnoresWhatItDoesNotKnow: a message of a kind the endpoint
// does not know (a newer replica's, during a rolling upgrade), one that is
// not JSON or not an envelope, and nil are dropped, starting nothing and
// publishing nothing.
func TestReceiveIgnoresWhatItDoesNotKnow(t *testing.T) {
	ep := New(&source{expose: mcpconfig.DefaultExpose()}, &Options{Relay: relayFunc(func(msg []byte) error {
		t.Errorf("published %s", msg)
		return nil
	})})
	before := goleak.IgnoreCurrent()
	for _, msg := range []string{
		`{"kind":"mcp_stream_moved","session":"s","stream":"x"}`,
		`{"kind":"mcp_sample","session":7}`,
		`{"kind":"mcp_`,
		`"mcp_sample"`,
		"",
	} {
		ep.Receive([]byte(msg))
	}
	ep.Receive(nil)
	goleak.VerifyNone(t, before)
}

// TestDocListsEveryKind: doc.go's table of the messages between replicas
// names every kind Receive takes itself (internal/sessions checks the
// kinds it receives against the same table).
func TestDocListsEveryKind(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{relayInputRetry} {
		if !strings.Contains(string(doc), "//\t"+kind+" ") {
			t.Errorf("doc.go's table has no row of %s", kind)
		}
	}
}
