package tree

import (
	"context"
	"strings"
	"time"
)

// Profile is how the agent presents itself in one user's queries: the
// agent_description, style and end_goal of the user's default config
// (Elysia's Settings page). The zero Profile is the service's default,
// and adds nothing to the decision prompt.
type Profile struct {
	// AgentDescription says what the agent is for.
	AgentDescription string `json:"agent_description,omitempty"`
	// Style is how its messages to the user read.
	Style string `json:"style,omitempty"`
	// EndGoal says when a query is done.
	EndGoal string `json:"end_goal,omitempty"`
	// InitMode is the tree a new conversation of the user starts with
	// (Elysia's branch_initialisation); "" means the Manager's default.
	InitMode InitMode `json:"branch_initialisation,omitempty"`
}

// Profiles gives each user's Profile. persist satisfies it from the users'
// saved configs. Safe for concurrent use.
type Profiles interface {
	// Profile returns the user's profile; the zero Profile when the user
	// has none.
	Profile(ctx context.Context, userID string) (Profile, error)
}

// intro is what p puts before a node's instruction in the system message
// (docs/DECISION_PROMPT.md): one line per field set, then a blank line.
func (p Profile) intro() string {
	var b strings.Builder
	line := func(label, v string) {
		if v = strings.TrimSpace(v); v != "" {
			b.WriteString(label)
			b.WriteString(v)
			b.WriteByte('\n')
		}
	}
	line("You are an agent with this purpose: ", p.AgentDescription)
	line("Your end goal: ", p.EndGoal)
	line("Write your messages to the user in this style: ", p.Style)
	if b.Len() == 0 {
		return ""
	}
	b.WriteByte('\n')
	return b.String()
}

// profileForRun returns the profile a run of c uses: the one read when the
// run's own query created c moments ago, else the user's, read now.
func (c *Conversation) profileForRun(ctx context.Context) Profile {
	c.m.mu.Lock()
	p := c.firstProfile
	c.firstProfile = nil
	c.m.mu.Unlock()
	if p != nil {
		return *p
	}
	return c.m.profile(ctx, c.userID)
}

// profile returns the user's profile for a query. A profile that cannot be
// read is logged and the default used: the query still runs.
func (m *Manager) profile(ctx context.Context, userID string) Profile {
	if m.opts.Profiles == nil {
		return Profile{}
	}
	p, err := m.opts.Profiles.Profile(ctx, userID)
	if err != nil {
		m.logger.WarnContext(ctx, "read the user's profile; using the default", logKeyUser, userID, logKeyErr, err)
		return Profile{}
	}
	return p
}

// BuiltinProfileID is the id of the config a user has before saving any:
// the zero Profile. A config the user saves under this id replaces it, and
// is in force while no other config is the default.
const BuiltinProfileID = "default"

// SavedProfile is one of a user's named configs: a Profile under an id and
// a name, one of them the user's default (the one Profiles gives).
type SavedProfile struct {
	ID      string
	Name    string
	Default bool
	Updated time.Time
	Profile Profile
}
