package tree

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/elysia-go/elysia/tree/prompt"
)

// profileMap is a Profiles over a map; a user named "broken" fails.
type profileMap map[string]Profile

func (p profileMap) Profile(_ context.Context, user string) (Profile, error) {
	if user == "broken" {
		return Profile{}, errors.New("database is down")
	}
	return p[user], nil
}

// TestProfileOpensTheSystemMessage: a user's saved agent description, end
// goal and style open the system message of each of the user's decisions;
// a user without one (or whose profile cannot be read) gets the prompt as
// it always was.
func TestProfileOpensTheSystemMessage(t *testing.T) {
	m := NewManager(&Options{Profiles: profileMap{
		"alice": {AgentDescription: "You keep a shopping list.", Style: "Terse, no greetings.", EndGoal: "The list is up to date."},
	}})
	m.SetTools([]Placement{{Tool: gateway("todo")}})
	systemOf := func(user string) string {
		t.Helper()
		c, err := m.Conversation(t.Context(), user, "c1")
		if err != nil {
			t.Fatal(err)
		}
		model := script(step{call: "text_response", args: `{"text":"Done."}`})
		if err := c.Run(t.Context(), model, "hello", "q1", nil); err != nil {
			t.Fatalf("%s: %v", user, err)
		}
		return model.systems[0]
	}
	alice, bob, broken := systemOf("alice"), systemOf("bob"), systemOf("broken")
	want := "You are an agent with this purpose: You keep a shopping list.\n" +
		"Your end goal: The list is up to date.\n" +
		"Write your messages to the user in this style: Terse, no greetings.\n\n"
	if !strings.HasPrefix(alice, want) || strings.TrimPrefix(alice, want) != bob {
		t.Errorf("alice's system message:\n%s\nwant her profile, then bob's:\n%s", alice, bob)
	}
	msgs, _, err := prompt.Messages("", &prompt.Context{Budget: -1, EnvLimit: -1})
	if err != nil {
		t.Fatal(err)
	}
	systemRules := msgs[0].Parts[0].(llms.TextContent).Text
	if !strings.HasSuffix(bob, systemRules) || strings.Contains(bob, "You are an agent") {
		t.Errorf("bob's system message, without a profile:\n%s", bob)
	}
	if broken != bob {
		t.Errorf("a profile that cannot be read gave:\n%s\nwant the default", broken)
	}
}

// TestProfileModeStartsNewConversations: a user's profile names the tree
// the user's new conversations start with; conversations that exist keep
// theirs, and other users get the Manager's default.
func TestProfileModeStartsNewConversations(t *testing.T) {
	profiles := profileMap{}
	m := NewManager(&Options{Profiles: profiles})
	m.SetTools([]Placement{{Tool: gateway("todo")}})
	before, err := m.Conversation(t.Context(), "alice", "c1")
	if err != nil {
		t.Fatal(err)
	}
	profiles["alice"] = Profile{InitMode: Empty}
	for _, tt := range []struct {
		user, conv string
		want       InitMode
	}{{"alice", "c2", Empty}, {"alice", "c1", OneBranch}, {"bob", "c1", OneBranch}} {
		c, err := m.Conversation(t.Context(), tt.user, tt.conv)
		if err != nil {
			t.Fatal(err)
		}
		if c.Mode() != tt.want {
			t.Errorf("%s/%s: mode %q, want %q", tt.user, tt.conv, c.Mode(), tt.want)
		}
	}
	if before.Mode() != OneBranch {
		t.Errorf("alice's existing conversation changed mode: %q", before.Mode())
	}
}

// countingProfiles counts its reads.
type countingProfiles struct {
	mu sync.Mutex
	n  int
}

func (p *countingProfiles) Profile(context.Context, string) (Profile, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	return Profile{Style: "Terse."}, nil
}

func (p *countingProfiles) reads() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

// TestProfileReadOncePerQuery: a query that creates its conversation reads
// the profile once (for the tree mode and the prompt alike); a conversation
// made earlier reads it again when its first query runs.
func TestProfileReadOncePerQuery(t *testing.T) {
	profiles := &countingProfiles{}
	m := NewManager(&Options{Profiles: profiles})
	m.SetTools([]Placement{{Tool: gateway("todo")}})
	model := script(step{call: "text_response", args: `{"text":"Done."}`})
	model.last = &step{call: "text_response", args: `{"text":"Done."}`}
	query := func(conv string) {
		t.Helper()
		if err := m.Query(t.Context(), model, "alice", conv, "", "hello", nil); err != nil {
			t.Fatal(err)
		}
	}
	query("c1")
	if n := profiles.reads(); n != 1 {
		t.Errorf("a query creating its conversation read the profile %d times, want 1", n)
	}
	query("c1")
	if n := profiles.reads(); n != 2 {
		t.Errorf("a second query: %d reads in all, want 2", n)
	}
	if _, err := m.Conversation(t.Context(), "alice", "c2"); err != nil {
		t.Fatal(err)
	}
	query("c2")
	if n := profiles.reads(); n != 4 {
		t.Errorf("a conversation made by GET, then queried: %d reads in all, want 4", n)
	}
	for i, sys := range model.systems {
		if !strings.HasPrefix(sys, "Write your messages to the user in this style: Terse.") {
			t.Errorf("decision %d without the profile: %.80q", i, sys)
		}
	}
}
