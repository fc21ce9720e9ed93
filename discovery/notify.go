package discovery

import (
	"time"

	"github.com/elysia-go/elysia/mcpgateway"
)

// Notify makes d send a value to c whenever what Gateways, ConfigError or a
// gateway's Status report may have changed: after every load and reload
// (also one that failed), after an eager connect ends, and after every
// execute, change of a circuit or change of state that a gateway reports to
// its Observer. The last include the changes a gateway makes on its own,
// with no request or reload behind them: a server process that dies, a
// health ping that fails, a back-off that runs out, a session connecting.
//
// As with signal.Notify, d never blocks sending to c: a value that does not
// fit is dropped, so c should have a buffer of one, and a value waiting in
// it means "look again". Notify may be called with several channels, and
// again with the same one (which changes nothing). The channel is never
// closed. Safe for concurrent use.
func (d *Discovery) Notify(c chan<- struct{}) { d.listen(c, true) }

// NotifyCatalog is Notify without the executes and the changes of a
// circuit: d sends to c after every load and reload, and when a gateway
// reports other tool names, a change of its resources or prompts, or of
// its state; what a catalogue of the servers' tools is made of (the /mcp
// endpoint's) can only have changed then. Stop undoes it. A channel given
// to both Notify and NotifyCatalog is told as the last call said.
func (d *Discovery) NotifyCatalog(c chan<- struct{}) { d.listen(c, false) }

// listen adds c to the listeners, told of calls too when calls.
func (d *Discovery) listen(c chan<- struct{}, calls bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.listeners == nil {
		d.listeners = make(map[chan<- struct{}]bool)
	}
	d.listeners[c] = calls
}

// Stop undoes Notify for c: once Stop returns, d sends nothing more to c.
// Stopping a channel that was never given to Notify does nothing.
func (d *Discovery) Stop(c chan<- struct{}) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.listeners, c)
}

// changed tells every channel given to Notify or NotifyCatalog, without
// blocking. It takes d.mu, so callers must not hold it; it is called from
// gateway observers, which may hold a gateway's locks, and d never calls
// into a gateway while holding d.mu for anything that takes them.
func (d *Discovery) changed() { d.tell(false) }

// called tells the channels given to Notify of a call or a circuit's
// change, without blocking, as changed does.
func (d *Discovery) called() { d.tell(true) }

func (d *Discovery) tell(call bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for c, calls := range d.listeners {
		if call && !calls {
			continue
		}
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

// changeObserver is the Observer every gateway of a Discovery gets: it
// passes each observation on to next (the caller's Observer, if any, and a
// state change only when next is a StateObserver too) and then tells the
// Notify channels.
type changeObserver struct {
	next mcpgateway.Observer
	d    *Discovery
}

var (
	_ mcpgateway.Observer      = changeObserver{}
	_ mcpgateway.StateObserver = changeObserver{}
	_ mcpgateway.ToolsObserver = changeObserver{}
	_ mcpgateway.ListsObserver = changeObserver{}
)

// ObserveLists passes a server's resources or prompts change on (when
// next wants it) and tells the Notify channels.
func (o changeObserver) ObserveLists(server string) {
	if n, ok := o.next.(mcpgateway.ListsObserver); ok {
		n.ObserveLists(server)
	}
	o.d.changed()
}

// ObserveTools passes a server's new tool names on (when next wants them)
// and tells the Notify channels.
func (o changeObserver) ObserveTools(server string) {
	if n, ok := o.next.(mcpgateway.ToolsObserver); ok {
		n.ObserveTools(server)
	}
	o.d.changed()
}

func (o changeObserver) ObserveCall(server, tool, status string, dur time.Duration) {
	if o.next != nil {
		o.next.ObserveCall(server, tool, status, dur)
	}
	o.d.called()
}

func (o changeObserver) ObserveCircuit(server, state string) {
	if o.next != nil {
		o.next.ObserveCircuit(server, state)
	}
	o.d.called()
}

func (o changeObserver) ObserveState(server string, state mcpgateway.State) {
	if so, ok := o.next.(mcpgateway.StateObserver); ok {
		so.ObserveState(server, state)
	}
	o.d.changed()
}
