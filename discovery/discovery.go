package discovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/elysia-go/elysia/mcpgateway"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
	"github.com/elysia-go/elysia/tree"
)

// Sink receives the gateways to place in every tree, in file order, each
// time the set changes. SetTools must be safe for concurrent use with the
// trees' readers; it is called by one goroutine at a time.
type Sink interface {
	SetTools(placements []tree.Placement)
}

// Options configures a Discovery. The zero value is usable.
type Options struct {
	// Logger receives lifecycle and reload messages. Nil discards them.
	Logger *slog.Logger
	// Load is passed to mcpconfig.Load on every (re)load. Nil means defaults;
	// a Prompt set here is used for the first load only (never on a reload).
	Load *mcpconfig.LoadOptions
	// Gateway is passed to every mcpgateway.New. Nil means defaults.
	Gateway *mcpgateway.Options
	// Debounce is the quiet period after a file event before reloading.
	// Zero means 100 ms.
	Debounce time.Duration
	// DrainGrace bounds how long a removed or replaced gateway's in-flight
	// calls may run before it is closed. Zero means 10 s.
	DrainGrace time.Duration
	// OnReload, when set, is called after every reload attempt with its
	// error (nil on success). It must not block.
	OnReload func(err error)
}

// Discovery owns the gateways built from one mcp.json file. Create it with
// New, then call Load once and Watch to follow the file; Close ends the
// watcher and every gateway. All methods are safe for concurrent use.
type Discovery struct {
	path   string
	sink   Sink
	opts   Options
	logger *slog.Logger

	// lifetime is the discovery's own context: it outlives Load's caller and
	// owns the watcher and the background closing of gateways. It is created
	// in New and cancelled in Close.
	lifetime context.Context //nolint:containedctx // component lifetime, see comment
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	reloadMu sync.Mutex // serialises Load and Reload

	// answers are the start-up prompt's outcomes, keyed by answerKey and
	// replayed on reloads (which never prompt). Guarded by reloadMu.
	answers map[answerKey]answer

	// mu guards cfg, configErr, gateways, closed, listeners.
	mu        sync.Mutex
	cfg       *mcpconfig.Config
	configErr error
	gateways  []*mcpgateway.Gateway
	closed    bool
	// listeners holds the channels given to Notify (true: told of calls
	// too) and NotifyCatalog (false).
	listeners map[chan<- struct{}]bool
}

// New returns a Discovery for the mcp.json at path that feeds sink. It does
// no I/O. It panics if sink is nil.
func New(path string, sink Sink, opts *Options) *Discovery {
	if sink == nil {
		panic("discovery: nil sink")
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Debounce <= 0 {
		o.Debounce = 100 * time.Millisecond
	}
	if o.DrainGrace <= 0 {
		o.DrainGrace = 10 * time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	d := &Discovery{
		path:     path,
		sink:     sink,
		logger:   o.Logger.With("config", path),
		lifetime: ctx,
		cancel:   cancel,
		answers:  map[answerKey]answer{},
	}
	// Every gateway reports its calls, circuit changes and state changes
	// to d, which passes them on to the caller's Observer and tells
	// Notify's channels.
	var gw mcpgateway.Options
	if o.Gateway != nil {
		gw = *o.Gateway
	}
	gw.Observer = changeObserver{next: gw.Observer, d: d}
	o.Gateway = &gw
	d.opts = o
	return d
}

// Load reads the file for the first time, builds a gateway per server and
// places the enabled ones. A bad file is returned as an error (the service
// exits with code 2); nothing is placed then. Eager servers start
// connecting in the background.
func (d *Discovery) Load(ctx context.Context) error {
	d.reloadMu.Lock()
	defer d.reloadMu.Unlock()
	var lo mcpconfig.LoadOptions
	if d.opts.Load != nil {
		lo = *d.opts.Load
	}
	if ask := lo.Prompt; ask != nil {
		lo.Prompt = func(in mcpconfig.Input) (string, error) {
			v, err := ask(in)
			d.answers[answerKey{in.Server, in.ID}] = answer{v, err}
			return v, err
		}
	}
	cfg, err := mcpconfig.Load(d.path, &lo)
	if err != nil {
		return err
	}
	d.apply(cfg)
	return nil
}

// answerKey names an input: a server's own inputs may share an id with
// another server's or a top-level one (Server "").
type answerKey struct{ server, id string }

// answer is what the start-up prompt returned for one input.
type answer struct {
	val string
	err error
}

// remembered answers an input as the start-up prompt did: the value typed,
// or the same error (so an unresolved server's reason, and so its config,
// does not change). For an input nobody was asked about, its error makes
// the parser fall back to the input's default, which is what start-up used.
func (d *Discovery) remembered(in mcpconfig.Input) (string, error) {
	if a, ok := d.answers[answerKey{in.Server, in.ID}]; ok {
		return a.val, a.err
	}
	return "", fmt.Errorf("input %q was not given at start-up and is never asked for on a reload", in.ID)
}

// Reload reads the file again and applies the difference. When the file is
// invalid the last good config stays in force, the error is kept for
// ConfigError and logged, and Reload returns it.
func (d *Discovery) Reload(ctx context.Context) error {
	d.reloadMu.Lock()
	defer d.reloadMu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	var lo mcpconfig.LoadOptions
	if d.opts.Load != nil {
		lo = *d.opts.Load
	}
	lo.Prompt = d.remembered // never ask the terminal on a reload
	cfg, err := mcpconfig.Load(d.path, &lo)
	if err != nil {
		d.mu.Lock()
		d.configErr = err
		d.mu.Unlock()
		d.logger.WarnContext(ctx, "config reload failed; keeping the last good config", logKeyErr, err)
		d.changed()
		d.notify(err)
		return err
	}
	d.apply(cfg)
	d.logger.InfoContext(ctx, "config reloaded", "servers", len(cfg.Servers))
	d.notify(nil)
	return nil
}

func (d *Discovery) notify(err error) {
	if d.opts.OnReload != nil {
		d.opts.OnReload(err)
	}
}

// apply builds the new gateway list (reusing unchanged gateways, and those
// that can adopt the change in place: new roots), hands the
// placements to the sink, then retires the gateways that left.
func (d *Discovery) apply(cfg *mcpconfig.Config) {
	for _, w := range cfg.Warnings {
		d.logger.Warn("config warning", "warning", w)
	}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	old := make(map[string]*mcpgateway.Gateway, len(d.gateways))
	for _, g := range d.gateways {
		old[g.Config().Name] = g
	}
	next := make([]*mcpgateway.Gateway, 0, len(cfg.Servers))
	var started []*mcpgateway.Gateway
	for _, sc := range cfg.Servers {
		if g, ok := old[sc.Name]; ok && g.Adopt(sc) {
			next = append(next, g)
			delete(old, sc.Name)
			continue
		}
		g := mcpgateway.New(sc, d.opts.Gateway)
		next = append(next, g)
		started = append(started, g)
	}
	d.cfg, d.configErr, d.gateways = cfg, nil, next
	d.mu.Unlock()

	d.sink.SetTools(placements(next))
	d.changed()

	for name, g := range old {
		d.logger.Info("gateway retired", logKeyServer, name)
		d.retire(g)
	}
	for _, g := range started {
		if c := g.Config(); c.Eager && c.Enabled && c.Unresolved == "" {
			d.connect(g)
		}
	}
}

func placements(gws []*mcpgateway.Gateway) []tree.Placement {
	out := make([]tree.Placement, 0, len(gws))
	for _, g := range gws {
		c := g.Config()
		if !c.Enabled {
			continue
		}
		out = append(out, tree.Placement{Tool: g, Branch: c.Branch})
	}
	return out
}

// retire closes g in the background once its in-flight calls have finished
// or DrainGrace has passed.
func (d *Discovery) retire(g *mcpgateway.Gateway) {
	started := d.goOwned(func() {
		ctx, cancel := context.WithTimeout(d.lifetime, d.opts.DrainGrace)
		defer cancel()
		if err := g.Drain(ctx); err != nil {
			d.logger.Warn("gateway closed with calls still running", logKeyServer, g.Config().Name, logKeyErr, err)
		}
		if err := g.Close(); err != nil {
			d.logger.Warn("gateway close", logKeyServer, g.Config().Name, logKeyErr, err)
		}
	})
	if !started { // closing: end it now rather than leave its process behind
		_ = g.Close() // bounded; its error was already logged by the gateway
	}
}

// goOwned runs fn on a goroutine that Close waits for, unless Close has
// begun; it reports whether fn was started. Registering under d.mu keeps
// wg.Add from racing Close's wg.Wait.
func (d *Discovery) goOwned(fn func()) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return false
	}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		fn()
	}()
	return true
}

// connect starts an eager gateway's session in the background.
func (d *Discovery) connect(g *mcpgateway.Gateway) {
	d.goOwned(func() {
		if err := g.Connect(d.lifetime); err != nil && d.lifetime.Err() == nil {
			d.logger.Warn("eager connect failed", logKeyServer, g.Config().Name, logKeyErr, err)
		}
		d.changed()
	})
}

// Gateways returns the current gateways in file order, disabled ones
// included. The slice is a copy; the gateways are shared.
func (d *Discovery) Gateways() []*mcpgateway.Gateway {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]*mcpgateway.Gateway(nil), d.gateways...)
}

// Gateway finds a gateway by server name or gateway tool name.
func (d *Discovery) Gateway(name string) (*mcpgateway.Gateway, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, g := range d.gateways {
		if c := g.Config(); c.Name == name || mcpconfig.ToolName(c.Name) == name {
			return g, true
		}
	}
	return nil, false
}

// ConfigError returns the error of the last reload when it failed (the last
// good config is still in force), or nil.
func (d *Discovery) ConfigError() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.configErr
}

// Expose returns the "expose" block of the config in use (the defaults
// before the first load).
func (d *Discovery) Expose() mcpconfig.Expose {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cfg == nil {
		return mcpconfig.DefaultExpose()
	}
	return d.cfg.Expose
}

// Path returns the mcp.json path this Discovery follows.
func (d *Discovery) Path() string { return d.path }

// Close stops watching, waits for background work, and closes every
// gateway (ending their processes). It is idempotent.
func (d *Discovery) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	gws := d.gateways
	d.gateways = nil
	d.mu.Unlock()

	d.cancel()
	d.wg.Wait()
	var errs []error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, g := range gws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := g.Close(); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("close gateway %q: %w", g.Config().Name, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
