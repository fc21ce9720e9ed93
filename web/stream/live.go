package stream

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/elysia-go/elysia/tools"
	"github.com/elysia-go/elysia/web"
	"github.com/elysia-go/elysia/web/internal/sse"
)

// Changes tells the event streams (GET /events/...) that the servers'
// status or the trees may have changed for a reason web does not see: an
// mcp.json reload, a gateway connecting, a tool call made during a run.
// cmd satisfies it.
type Changes interface {
	// Subscribe returns a channel that receives a value after each such
	// change, until ctx ends. Values coalesce: the implementation sends
	// without blocking into a buffer of one, and a waiting value means
	// "look again". The channel is closed when no more changes will come
	// because the service is shutting down; the stream then ends, so that
	// an open page does not hold up the shutdown. Subscribe is called
	// concurrently, once per stream, and must not block.
	Subscribe(ctx context.Context) <-chan struct{}
}

// Types of the messages of an event stream; each one's payload is the body
// the matching JSON route answers with.
const (
	liveServers       = "servers"       // GET /api/servers
	liveTree          = "tree"          // GET /tree/:user_id/:conversation_id
	liveConversations = "conversations" // GET /conversations/:user_id
)

// liveMinInterval is the least time between two looks at what changed on
// one stream, so that a burst of tool calls costs each stream a few
// snapshots rather than one per call.
const liveMinInterval = 200 * time.Millisecond

// topic is a set of the things an event stream shows.
type topic uint8

const (
	topicServers topic = 1 << iota
	topicTree
	topicConversations

	allTopics = topicServers | topicTree | topicConversations
)

// liveHub tells the open event streams about changes made through this
// server's own routes (a query, a tree operation, a deleted conversation).
// Its zero value is not usable; use newLiveHub. Safe for concurrent use.
type liveHub struct {
	// relay, when set, tells the other replicas of each change published
	// (see Streams.relayLiveChange); it does not block.
	relay func(user string, t topic)

	// mu guards subs and the pending field of every liveSub.
	mu   sync.Mutex
	subs map[*liveSub]struct{}
}

// liveSub is one stream's subscription to a liveHub.
type liveSub struct {
	user string
	// wake holds a value while pending is not empty.
	wake    chan struct{}
	pending topic
}

func newLiveHub() *liveHub {
	return &liveHub{subs: make(map[*liveSub]struct{})}
}

// subscribe registers a stream showing user's state; unsubscribe must
// follow.
func (h *liveHub) subscribe(user string) *liveSub {
	sub := &liveSub{user: user, wake: make(chan struct{}, 1)}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.subs[sub] = struct{}{}
	return sub
}

func (h *liveHub) unsubscribe(sub *liveSub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.subs, sub)
}

// publish marks topics as changed for the streams of user ("" means every
// user) and wakes them, here and on the other replicas. It never blocks.
func (h *liveHub) publish(user string, t topic) {
	h.publishLocal(user, t)
	if h.relay != nil {
		h.relay(user, t)
	}
}

// publishLocal is publish for this server's streams only.
func (h *liveHub) publishLocal(user string, t topic) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for sub := range h.subs {
		if user != "" && sub.user != user {
			continue
		}
		sub.pending |= t
		select {
		case sub.wake <- struct{}{}:
		default:
		}
	}
}

// take returns and clears what changed for sub since the last take.
func (h *liveHub) take(sub *liveSub) topic {
	h.mu.Lock()
	defer h.mu.Unlock()
	t := sub.pending
	sub.pending = 0
	return t
}

// liveRunner tells the hub when a query ends, whichever transport carried
// it: a run changes its conversation (title, history, time) and may have
// connected gateways.
type liveRunner struct {
	Runner
	hub *liveHub
}

func (r liveRunner) RunQuery(ctx context.Context, userID, conversationID, queryID, query string, emit func(tools.Envelope)) error {
	defer r.hub.publish(userID, allTopics)
	return r.Runner.RunQuery(ctx, userID, conversationID, queryID, query, emit)
}

// liveEvents serves the event stream of a user's page: Server-Sent Events,
// one "data:" message {"type", "payload"} per change, whose payload is the
// body of the JSON route that shows the same thing (see liveServers). The
// first messages give every topic; later ones only what changed, each sent
// only when its body differs from the last one sent. With a
// :conversation_id the stream also carries that conversation's tree.
//
// Idle streams get a ": ping" comment every heartbeat interval. The stream
// ends when the client goes away, a write misses web.Options.StreamWriteTimeout,
// or Options.Changes says the service is shutting down.
func (s *Streams) liveEvents(c *gin.Context) {
	hub := s.hub
	ctx := c.Request.Context()
	ls := &liveStream{
		s:    s,
		w:    sse.NewWriter(c.Writer, s.writeTimeout),
		user: c.Param("user_id"),
		conv: c.Param("conversation_id"),
		last: make(map[string][]byte, 3),
	}
	want := topicServers | topicConversations
	if ls.conv != "" {
		want |= topicTree
	}
	sub := hub.subscribe(ls.user)
	defer hub.unsubscribe(sub)
	var external <-chan struct{}
	if s.changes != nil {
		external = s.changes.Subscribe(ctx)
	}

	heartbeat := time.NewTimer(s.heartbeat)
	defer heartbeat.Stop()
	// throttle is armed while pending changes wait for liveMinInterval.
	throttle := time.NewTimer(liveMinInterval)
	throttle.Stop()
	defer throttle.Stop()
	throttled := false
	pending := want
	var lastLook time.Time
	for {
		if pending != 0 && !throttled {
			if wait := liveMinInterval - time.Since(lastLook); wait > 0 && !lastLook.IsZero() {
				throttle.Reset(wait)
				throttled = true
			} else {
				lastLook = time.Now()
				wrote, err := ls.send(ctx, pending)
				if err != nil {
					ls.stop(ctx, err)
					return
				}
				pending = 0
				if wrote {
					heartbeat.Reset(s.heartbeat)
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case _, ok := <-external:
			if !ok {
				return
			}
			pending |= (topicServers | topicTree) & want
		case <-sub.wake:
			pending |= hub.take(sub) & want
		case <-throttle.C:
			throttled = false
		case <-heartbeat.C:
			if err := ls.w.Ping(); err != nil {
				ls.stop(ctx, err)
				return
			}
			heartbeat.Reset(s.heartbeat)
		}
	}
}

// liveStream is the state of one event stream, used by its handler's
// goroutine only.
type liveStream struct {
	s          *Streams
	w          *sse.Writer
	user, conv string
	// last is the payload last sent for each message type.
	last map[string][]byte
}

// send writes a message for each topic in t whose body changed, and
// reports whether it wrote any; the first call also sends the stream's
// headers, even when nothing changed.
func (ls *liveStream) send(ctx context.Context, t topic) (wrote bool, err error) {
	for _, m := range []struct {
		t    topic
		typ  string
		body func(context.Context) object
	}{
		{topicServers, liveServers, ls.servers},
		{topicTree, liveTree, ls.tree},
		{topicConversations, liveConversations, ls.conversations},
	} {
		if t&m.t == 0 {
			continue
		}
		w, err := ls.message(m.typ, m.body(ctx))
		if err != nil {
			return wrote, err
		}
		wrote = wrote || w
	}
	if !ls.w.Started() {
		return true, ls.w.Write(nil)
	}
	return wrote, nil
}

// message writes {"type": typ, "payload": body} unless body is what was
// last sent for typ, and reports whether it did.
func (ls *liveStream) message(typ string, body object) (bool, error) {
	b, err := tools.Marshal(body)
	if err != nil {
		return false, err
	}
	if prev, ok := ls.last[typ]; ok && string(prev) == string(b) {
		return false, nil
	}
	ls.last[typ] = b
	// The message is spliced rather than marshalled: b is already compact
	// JSON (a tree can be large), and typ is one of the live* constants,
	// which need no escaping.
	msg := make([]byte, 0, len(b)+len(typ)+40)
	msg = append(msg, `data: {"type":"`...)
	msg = append(msg, typ...)
	msg = append(msg, `","payload":`...)
	msg = append(msg, b...)
	msg = append(msg, "}\n\n"...)
	return true, ls.w.Write(msg)
}

// stop logs why a stream ended early, when that is worth a line.
func (ls *liveStream) stop(ctx context.Context, err error) {
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		ls.s.logger.WarnContext(ctx, "stream write timed out: client stopped reading; ending the stream",
			slog.String(logKeyStream, "events"), slog.String(logKeyUserID, ls.user), slog.Duration(logKeyTimeout, ls.s.writeTimeout))
	case ctx.Err() == nil:
		ls.s.logger.DebugContext(ctx, "event stream ended", slog.String(logKeyUserID, ls.user), slog.Any(logKeyErr, err))
	}
}

// failed is the body of a message whose route would have failed: its
// public message, with the detail logged from 500 up, and extra.
func (ls *liveStream) failed(ctx context.Context, what string, err error, extra ...field) object {
	status, msg := web.PublicError(ctx, err)
	if status >= http.StatusInternalServerError && ctx.Err() == nil {
		ls.s.logger.ErrorContext(ctx, "event stream: "+what+" failed", slog.Int(logKeyStatus, status), slog.Any(logKeyErr, err))
	}
	return append(object{kv("error", msg)}, extra...)
}

func (ls *liveStream) servers(ctx context.Context) object {
	st, err := ls.s.k.ServersFor(ctx, ls.user)
	if err != nil {
		return ls.failed(ctx, "server status", err, kv("servers", web.EmptyList))
	}
	return web.OK(kv("config_file", st.ConfigFile), kv("config_error", st.ConfigError), kv("servers", nonNil(st.Servers)))
}

func (ls *liveStream) tree(ctx context.Context) object {
	b, err := ls.s.k.TreeJSON(ctx, ls.user, ls.conv)
	if err != nil {
		return ls.failed(ctx, "tree", err, kv("conversation_id", ls.conv), kv("tree", web.EmptyObject))
	}
	return web.OK(kv("conversation_id", ls.conv), kv("tree", b))
}

func (ls *liveStream) conversations(ctx context.Context) object {
	list, err := ls.s.k.Conversations(ctx, ls.user)
	if err != nil {
		return ls.failed(ctx, "conversation list", err, kv("conversations", web.EmptyList))
	}
	return web.OK(kv("conversations", list))
}
