package tree

import (
	"context"
	"errors"
	"strings"
	"testing"
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
