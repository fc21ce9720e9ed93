package stream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/tree"
	"github.com/elysia-go/elysia/web"
)

// DefaultRelayWait is how long a request waits for the other replicas to
// answer through the Relay when Options.RelayWait is zero.
const DefaultRelayWait = time.Second

// Relay carries this server's requests and news to the other replicas of
// the service (the servers that share its database), whose Streams get
// each message through [Streams.Receive]: a stop or an answer to a
// server's question for work that runs on another replica, and the
// changes the other replicas' event streams must show. cmd satisfies it
// over PostgreSQL (LISTEN/NOTIFY); with SQLite there is one replica and
// no Relay.
type Relay interface {
	// Publish sends msg to every other replica and returns at once: it
	// must not block. Delivery is best-effort (a replica restarting, or a
	// database out of reach, misses messages), so every wait for an
	// answer is bounded. An error says msg was not taken. Safe for
	// concurrent use; msg is the caller's once Publish returns.
	Publish(msg []byte) error
}

// Kinds of relay messages.
const (
	relayStop     = "stop"     // stop the matching queries running here
	relayStopped  = "stopped"  // how many a stop stopped
	relayAnswer   = "answer"   // the answer to a question waiting here
	relayAnswered = "answered" // what the question's replica made of it
	relayLive     = "live"     // what changed for a user's event streams
)

// relayMsg is one message between replicas: a request (stop, answer)
// with a new id in Req, a reply to one naming it, or news (live).
type relayMsg struct {
	Kind          string         `json:"kind"`
	Req           string         `json:"req,omitempty"`
	User          string         `json:"user,omitempty"`
	Conversation  string         `json:"conversation,omitempty"`
	Query         string         `json:"query,omitempty"`
	ElicitationID string         `json:"elicitation_id,omitempty"`
	Action        string         `json:"action,omitempty"`
	Content       map[string]any `json:"content,omitempty"`
	Topics        topic          `json:"topics,omitempty"`
	Stopped       int            `json:"stopped,omitempty"`
	Status        int            `json:"status,omitempty"`
	Error         string         `json:"error,omitempty"`
}

// relayWaiters holds the requests of this server that wait for a reply
// through the Relay, by request id. The zero value is ready; it is safe
// for concurrent use.
type relayWaiters struct {
	// mu guards byReq.
	mu    sync.Mutex
	byReq map[string]chan relayMsg
}

func (w *relayWaiters) add(req string) chan relayMsg {
	ch := make(chan relayMsg, 4)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.byReq == nil {
		w.byReq = map[string]chan relayMsg{}
	}
	w.byReq[req] = ch
	return ch
}

func (w *relayWaiters) remove(req string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.byReq, req)
}

// deliver hands reply to its waiter, if it still waits; it never blocks.
func (w *relayWaiters) deliver(reply relayMsg) {
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case w.byReq[reply.Req] <- reply: // a nil channel (no waiter) is never ready
	default:
	}
}

// Receive handles a message that another replica's Streams published
// through its Relay: it stops the queries a stop names, gives an answer
// to the question it names and wakes the event streams of the user whose
// state changed, when those are on this server, and replies through
// this server's Relay. A nil msg says that messages may have been missed
// (the Relay's connection was lost for a while): every event stream looks
// again. Receive never blocks for long; the Relay calls it from one
// goroutine, or from several. It drops the messages that come before the
// web.Server is built (web.New calls Routes).
func (s *Streams) Receive(msg []byte) {
	if s.k == nil {
		return
	}
	if msg == nil {
		s.hub.publishLocal("", topicTree|topicConversations)
		return
	}
	var m relayMsg
	d := json.NewDecoder(bytes.NewReader(msg))
	d.UseNumber() // as decodeJSON decodes the answer the client sent
	if err := d.Decode(&m); err != nil {
		s.logger.Warn("relay message not understood", slog.Any(logKeyErr, err))
		return
	}
	switch m.Kind {
	case relayStop:
		if n := s.running.stop(m.User, m.Conversation, m.Query); n > 0 {
			s.tell(relayMsg{Kind: relayStopped, Req: m.Req, Stopped: n})
		}
	case relayAnswer:
		err := s.k.Trees().Answer(context.Background(), m.User, m.ElicitationID, tools.Answer{Action: m.Action, Content: m.Content})
		if errors.Is(err, tree.ErrNotFound) {
			return // not waiting here
		}
		reply := relayMsg{Kind: relayAnswered, Req: m.Req, Status: http.StatusOK}
		if err != nil {
			reply.Status = web.StatusOf(err)
			reply.Error = err.Error()
			if reply.Status >= http.StatusInternalServerError {
				s.logger.Error("relayed answer failed", slog.Int(logKeyStatus, reply.Status), slog.Any(logKeyErr, err))
				reply.Error = "internal error"
			}
		}
		s.tell(reply)
	case relayLive:
		s.hub.publishLocal(m.User, m.Topics&(topicTree|topicConversations))
	case relayStopped, relayAnswered:
		s.waiters.deliver(m)
	default:
		s.logger.Debug("relay message of an unknown kind", slog.String(logKeyKind, m.Kind))
	}
}

// tell publishes m through the Relay without waiting for a reply.
func (s *Streams) tell(m relayMsg) {
	b, err := json.Marshal(m)
	if err == nil {
		err = s.relay.Publish(b)
	}
	if err != nil {
		s.logger.Warn("relay message not sent", slog.String(logKeyKind, m.Kind), slog.Any(logKeyErr, err))
	}
}

// ask publishes the request m and returns the first reply that want
// takes, or false when none came within the relay wait or ctx ended.
func (s *Streams) ask(ctx context.Context, m relayMsg, want func(relayMsg) bool) (relayMsg, bool) {
	m.Req = tools.NewID()
	replies := s.waiters.add(m.Req)
	defer s.waiters.remove(m.Req)
	s.tell(m)
	timer := time.NewTimer(s.relayWait)
	defer timer.Stop()
	for {
		select {
		case r := <-replies:
			if want(r) {
				return r, true
			}
		case <-timer.C:
			return relayMsg{}, false
		case <-ctx.Done():
			return relayMsg{}, false
		}
	}
}

// stopQueries stops user's running queries that match (see
// runningQueries.stop) on this replica or, through the Relay, on the
// others, and returns how many it stopped.
func (s *Streams) stopQueries(ctx context.Context, user, conv, query string) int {
	if n := s.stopHere(user, conv, query); n > 0 || s.relay == nil {
		return n
	}
	return s.stopElsewhere(ctx, user, conv, query)
}

// stopHere stops the matching queries running on this replica and returns
// how many. When it stopped some for a stop naming no query, it tells the
// other replicas too: a conversation's queries run on one replica at a
// time, but others may hold queries waiting for the conversation.
func (s *Streams) stopHere(user, conv, query string) int {
	n := s.running.stop(user, conv, query)
	if n > 0 && query == "" && s.relay != nil {
		s.tell(relayMsg{Kind: relayStop, User: user, Conversation: conv, Query: query})
	}
	return n
}

// stopElsewhere asks the other replicas to stop the matching queries, and
// returns how many the first to stop some reported within the relay wait,
// or 0.
func (s *Streams) stopElsewhere(ctx context.Context, user, conv, query string) int {
	reply, ok := s.ask(ctx, relayMsg{Kind: relayStop, User: user, Conversation: conv, Query: query},
		func(r relayMsg) bool { return r.Stopped > 0 })
	if !ok {
		return 0
	}
	return reply.Stopped
}

// answer gives user's answer to the question elicitationID: to the run on
// this replica that asked it, else, through the Relay, to the replica
// whose run did (see answerElsewhere).
func (s *Streams) answer(ctx context.Context, user, elicitationID string, ans tools.Answer) error {
	err := s.k.Trees().Answer(ctx, user, elicitationID, ans)
	if s.relay == nil || !errors.Is(err, tree.ErrNotFound) {
		return err
	}
	return s.answerElsewhere(ctx, user, elicitationID, ans, err)
}

// answerElsewhere sends the answer to the other replicas and returns the
// outcome that the replica holding the question reports, or notFound, the
// error of this replica's own try, when none does within the relay wait.
func (s *Streams) answerElsewhere(ctx context.Context, user, elicitationID string, ans tools.Answer, notFound error) error {
	reply, ok := s.ask(ctx, relayMsg{Kind: relayAnswer, User: user, ElicitationID: elicitationID, Action: ans.Action, Content: ans.Content},
		func(relayMsg) bool { return true })
	switch {
	case !ok:
		return notFound
	case reply.Status == http.StatusOK:
		return nil
	default:
		return web.Error(reply.Status, reply.Error)
	}
}

// relayLiveChange tells the other replicas' event streams of user that
// the topics in t changed; the servers' status is each replica's own.
func (s *Streams) relayLiveChange(user string, t topic) {
	if t &= topicTree | topicConversations; t != 0 && user != "" {
		s.tell(relayMsg{Kind: relayLive, User: user, Topics: t})
	}
}
