package sessions

import "context"

// Track registers a call of ctx's session and returns its ctx, cancelled
// when the session ends, and the func that unregisters it.
func (h *Hub) Track(ctx context.Context) (context.Context, func()) {
	return h.TrackSession(ctx, sessionID(ctx))
}

// TrackSession registers work of session sid (a call, a GET stream) and
// returns its ctx, cancelled when the session ends, and the func that
// unregisters it. With sid "" it does nothing.
func (h *Hub) TrackSession(ctx context.Context, sid string) (context.Context, func()) {
	if sid == "" {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	key := &cancel
	h.mu.Lock()
	if h.inflight == nil {
		h.inflight = map[string]map[*context.CancelFunc]struct{}{}
	}
	if h.inflight[sid] == nil {
		h.inflight[sid] = map[*context.CancelFunc]struct{}{}
	}
	h.inflight[sid][key] = struct{}{}
	h.mu.Unlock()
	return ctx, func() {
		h.mu.Lock()
		delete(h.inflight[sid], key)
		if len(h.inflight[sid]) == 0 {
			delete(h.inflight, sid)
		}
		h.mu.Unlock()
		cancel()
	}
}

// CancelSession cancels every call of session sid.
func (h *Hub) CancelSession(sid string) {
	h.mu.Lock()
	calls := h.inflight[sid]
	delete(h.inflight, sid)
	h.mu.Unlock()
	for c := range calls {
		(*c)()
	}
}
