package tree

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/elysia-go/elysia/tools"
)

// MaxPendingQuestions is how many questions (MCP elicitations, through
// tools.Asker) may wait for one user's answers at once, across all their
// runs: a server that asks more cannot pile them up in the user's stream
// and history; Ask declines the ones over the cap at once, saying why.
// mcpgateway.MaxElicitationsPerCall bounds one call's questions.
const MaxPendingQuestions = 20

// questions holds the questions tools asked (tools.Asker) that wait for
// their users' answers, by elicitation id. The zero value is ready to use;
// it is safe for concurrent use.
type questions struct {
	// mu guards pending and perUser.
	mu      sync.Mutex
	pending map[string]*question
	perUser map[string]int // how many of pending are each user's
}

// question is one question waiting for its user.
type question struct {
	user   string
	check  func(map[string]any) (map[string]any, error)
	answer chan tools.Answer // buffered: the first answer wins
}

// add registers q under id, unless its user already has
// MaxPendingQuestions waiting: then it reports false.
func (qs *questions) add(id string, q *question) bool {
	qs.mu.Lock()
	defer qs.mu.Unlock()
	if qs.perUser[q.user] >= MaxPendingQuestions {
		return false
	}
	if qs.pending == nil {
		qs.pending, qs.perUser = map[string]*question{}, map[string]int{}
	}
	qs.pending[id] = q
	qs.perUser[q.user]++
	return true
}

func (qs *questions) remove(id string) {
	qs.mu.Lock()
	defer qs.mu.Unlock()
	q, ok := qs.pending[id]
	if !ok {
		return
	}
	delete(qs.pending, id)
	if qs.perUser[q.user]--; qs.perUser[q.user] == 0 {
		delete(qs.perUser, q.user)
	}
}

func (qs *questions) get(user, id string) (*question, bool) {
	qs.mu.Lock()
	defer qs.mu.Unlock()
	q, ok := qs.pending[id]
	if !ok || (user != "" && q.user != user) {
		return nil, false
	}
	return q, true
}

// Answer gives userID's answer to the question elicitationID that a tool of
// one of the user's runs asked (an elicitation event). A question that is not
// waiting, or not the user's, is ErrNotFound: users never learn of others'
// questions. An empty userID answers the question whatever its user, for a
// caller that may act for every user (an admin key, a keyless service),
// where the unguessable id alone names the question. An accepted answer is completed and checked as the question
// says (defaults filled in, the schema validated); a failed check is a
// *tools.ArgumentError and the question keeps waiting, so the user can fix
// the answer. Action must be accept, decline or cancel (else ErrInvalid).
func (m *Manager) Answer(_ context.Context, userID, elicitationID string, ans tools.Answer) error {
	switch ans.Action {
	case tools.ElicitAccept, tools.ElicitDecline, tools.ElicitCancel:
	default:
		return fmt.Errorf("action %q: want accept, decline or cancel: %w", ans.Action, ErrInvalid)
	}
	q, ok := m.questions.get(userID, elicitationID)
	if !ok {
		return fmt.Errorf("no question %q waits for an answer of user %q: %w", elicitationID, userID, ErrNotFound)
	}
	if ans.Action == tools.ElicitAccept && q.check != nil {
		content, err := q.check(ans.Content)
		if err != nil {
			return err
		}
		ans.Content = content
	}
	ans.Reason = ""
	select {
	case q.answer <- ans:
		return nil
	default:
		return fmt.Errorf("question %q was already answered: %w", elicitationID, ErrNotFound)
	}
}

// runEmitter is the Emitter a run gives its tools: events go to the run's
// stream, and it is a tools.Asker, whose questions go to the run's user as
// elicitation events and are answered through Manager.Answer.
type runEmitter struct{ r *run }

var _ tools.Asker = runEmitter{}

// Emit records ev as an event of the run and sends it.
func (e runEmitter) Emit(ev tools.Event) { e.r.emit(ev) }

// Ask sends q to the run's user and waits for the answer, or ctx. When
// the user has MaxPendingQuestions waiting already, it declines at once.
func (e runEmitter) Ask(ctx context.Context, q tools.Question) (tools.Answer, error) {
	r := e.r
	return r.c.m.ask(ctx, r.c.userID, q, r.emit, r.logger)
}

// ask registers q as a question of user, sends it with emit as an
// elicitation event and waits for the answer (Manager.Answer), or ctx.
// When the user has MaxPendingQuestions waiting already, it declines at
// once, saying why.
func (m *Manager) ask(ctx context.Context, user string, q tools.Question, emit func(tools.Event), logger *slog.Logger) (tools.Answer, error) {
	id := "eli-" + tools.NewID()
	pending := &question{user: user, check: q.Check, answer: make(chan tools.Answer, 1)}
	qs := &m.questions
	if !qs.add(id, pending) {
		reason := fmt.Sprintf("%d questions already wait for this user's answers (the cap per user)", MaxPendingQuestions)
		logger.InfoContext(ctx, "question declined", "server", q.Payload.Server, logKeyReason, reason)
		return tools.Answer{Action: tools.ElicitDecline, Reason: reason}, nil
	}
	defer qs.remove(id)
	p := q.Payload
	p.ElicitationID = id
	emit(tools.Event{Type: tools.EventElicitation, Payload: p})
	select {
	case ans := <-pending.answer:
		return ans, nil
	case <-ctx.Done():
		return tools.Answer{}, ctx.Err()
	}
}

// Interactive returns an Emitter for a tool call made outside a query (the
// server panel's run, POST /api/servers/:name/execute) by userID, who
// watches it: events go to emit, and it is a tools.Asker whose questions go
// to emit as elicitation events and are answered through Answer, as a
// run's are (at most MaxPendingQuestions waiting per user). emit must not
// block for long and must be safe for concurrent use: the gateway reports
// progress and asks from different goroutines.
func (m *Manager) Interactive(userID string, emit func(tools.Event)) tools.Emitter {
	return interactive{m: m, user: userID, emit: emit}
}

// interactive is the Emitter Interactive returns.
type interactive struct {
	m    *Manager
	user string
	emit func(tools.Event)
}

var _ tools.Asker = interactive{}

// Emit passes ev on.
func (e interactive) Emit(ev tools.Event) { e.emit(ev) }

// Ask puts q to the user and waits for the answer, or ctx.
func (e interactive) Ask(ctx context.Context, q tools.Question) (tools.Answer, error) {
	return e.m.ask(ctx, e.user, q, e.emit, e.m.logger)
}
