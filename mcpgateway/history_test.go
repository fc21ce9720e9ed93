package mcpgateway

import (
	"strings"
	"testing"
	"time"

	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// todoLogging is todoStdio logging at debug to its stderr, per user when
// perUser is set.
func todoLogging(t *testing.T, perUser bool) mcpconfig.ServerConfig {
	t.Helper()
	cfg := todoStdio(t)
	cfg.Env["TODO_LOG_LEVEL"] = "debug"
	cfg.PerUser = perUser
	cfg.ConnectTimeout, cfg.CallTimeout = 15*time.Second, 5*time.Second
	return cfg
}

// callsOf returns the tools/call entries of h with their messages.
func callsOf(h History) []string {
	var out []string
	for _, e := range h.Requests {
		if e.Method == "tools/call" {
			out = append(out, e.User+": "+e.Message)
		}
	}
	return out
}

// TestHistoryPerUserSessionIsTheUsers: on a per-user server, alice's
// calls are in her history and an admin's, never in bob's; bob sees his
// own; each user's history comes with their process's stderr.
func TestHistoryPerUserSessionIsTheUsers(t *testing.T) {
	t.Parallel()
	g := newGateway(t, todoLogging(t, true), nil)
	for _, user := range []string{"alice", "bob"} {
		if _, err := g.Execute(WithUser(t.Context(), user), "create_todo", map[string]any{"title": user + "'s todo"}); err != nil {
			t.Fatalf("%s: %v", user, err)
		}
	}
	alice, bob, admin := callsOf(g.HistoryFor("alice")), callsOf(g.HistoryFor("bob")), callsOf(g.History())
	if len(alice) != 1 || !strings.Contains(alice[0], "alice's todo") || !strings.HasPrefix(alice[0], "alice: ") {
		t.Errorf("alice sees calls %q; want her one", alice)
	}
	if len(bob) != 1 || strings.Contains(bob[0], "alice") {
		t.Errorf("bob sees calls %q; want his own only", bob)
	}
	if len(admin) != 2 {
		t.Errorf("an admin sees calls %q; want both", admin)
	}
	if h := g.HistoryFor(""); len(h.Requests) != 0 || len(h.Stderr) != 0 {
		t.Errorf("no user sees %d requests, %d stderr tails; want none", len(h.Requests), len(h.Stderr))
	}
	tails := g.HistoryFor("alice").Stderr
	if len(tails) != 1 || tails[0].User != "alice" || len(tails[0].Lines) == 0 {
		t.Errorf("alice's stderr: %+v; want her process's lines", tails)
	}
}

// TestHistorySharedSessionHidesOthersCalls: on a shared session the
// listing is everyone's, a call its user's (and an admin's) only.
func TestHistorySharedSessionHidesOthersCalls(t *testing.T) {
	t.Parallel()
	g := newGateway(t, todoLogging(t, false), nil)
	if _, err := g.List(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Execute(WithUser(t.Context(), "alice"), "create_todo", map[string]any{"title": "alice's todo"}); err != nil {
		t.Fatal(err)
	}
	for user, want := range map[string]int{"alice": 1, "bob": 0} {
		h := g.HistoryFor(user)
		if calls := callsOf(h); len(calls) != want {
			t.Errorf("%s sees calls %q; want %d", user, calls, want)
		}
		listed := false
		for _, e := range h.Requests {
			listed = listed || e.Method == "tools/list" && e.Duration > 0 && e.AnswerBytes > 0
		}
		if !listed {
			t.Errorf("%s does not see the shared tools/list", user)
		}
	}
}

// TestHistoryServerRequestIsTheCallers: on a shared session the question
// a server asks during alice's call is in her history (and an admin's),
// marked as the server's, and not in bob's.
func TestHistoryServerRequestIsTheCallers(t *testing.T) {
	t.Parallel()
	cfg := conformanceStdio(t, false)
	cfg.ProtocolVersion = "2025-11-25" // the server asks with elicitation/create
	g := newGateway(t, cfg, nil)
	if _, err := g.Execute(WithUser(t.Context(), "alice"), "test_elicitation", map[string]any{"message": "Your name?"}); err != nil {
		t.Fatal(err)
	}
	asked := func(h History) int {
		n := 0
		for _, e := range h.Requests {
			if e.Method == "elicitation/create" && e.FromServer && e.User == "alice" {
				n++
			}
		}
		return n
	}
	if a, b, admin := asked(g.HistoryFor("alice")), asked(g.HistoryFor("bob")), asked(g.History()); a != 1 || b != 0 || admin != 1 {
		t.Errorf("the server's question is seen %d times by alice, %d by bob, %d by an admin; want 1, 0, 1", a, b, admin)
	}
}
