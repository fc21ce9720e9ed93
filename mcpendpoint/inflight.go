package mcpendpoint

import "context"

// track registers a call of ctx's session and returns its ctx, cancelled
// when the session ends, and the func that unregisters it.
func (e *Endpoint) track(ctx context.Context) (context.Context, func()) {
	return e.trackSession(ctx, SessionID(ctx))
}

// trackSession registers work of session sid (a call, a GET stream) and
// returns its ctx, cancelled when the session ends, and the func that
// unregisters it. With sid "" it does nothing.
func (e *Endpoint) trackSession(ctx context.Context, sid string) (context.Context, func()) {
	if sid == "" {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	key := &cancel
	e.mu.Lock()
	if e.inflight == nil {
		e.inflight = map[string]map[*context.CancelFunc]struct{}{}
	}
	if e.inflight[sid] == nil {
		e.inflight[sid] = map[*context.CancelFunc]struct{}{}
	}
	e.inflight[sid][key] = struct{}{}
	e.mu.Unlock()
	return ctx, func() {
		e.mu.Lock()
		delete(e.inflight[sid], key)
		if len(e.inflight[sid]) == 0 {
			delete(e.inflight, sid)
		}
		e.mu.Unlock()
		cancel()
	}
}

// cancelSession cancels every call of session sid.
func (e *Endpoint) cancelSession(sid string) {
	e.mu.Lock()
	calls := e.inflight[sid]
	delete(e.inflight, sid)
	e.mu.Unlock()
	for c := range calls {
		(*c)()
	}
}
