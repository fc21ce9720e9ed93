package discovery

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/fsnotify/fsnotify"
)

// Watch follows the config file until Close: it watches the file's folder
// (so editors that write a temporary file and rename it over the original
// are seen), keeps the events for the file's name, debounces them and
// reloads. It returns once the watcher is running.
func (d *Discovery) Watch() error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch %s: %w", d.path, err)
	}
	dir, base := filepath.Split(d.path)
	if dir == "" {
		dir = "."
	}
	if err := w.Add(dir); err != nil {
		_ = w.Close() // best effort: the Add error is the one to report
		return fmt.Errorf("watch %s: %w", dir, err)
	}
	// The timer only signals; the reload runs on the watcher goroutine,
	// which Close waits for.
	due := make(chan struct{}, 1)
	deb := newDebouncer(d.opts.Debounce, func() {
		select {
		case due <- struct{}{}:
		default:
		}
	})
	started := d.goOwned(func() {
		defer func() { _ = w.Close() }() // watching is over; nothing is waiting on a close error
		defer deb.Stop()
		d.watchLoop(d.lifetime, w, base, deb, due)
	})
	if !started {
		deb.Stop()
		_ = w.Close() // never used
		return fmt.Errorf("watch %s: %w", d.path, ErrClosed)
	}
	return nil
}

func (d *Discovery) watchLoop(ctx context.Context, w *fsnotify.Watcher, base string, deb *debouncer, due <-chan struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-due:
			_ = d.Reload(ctx) // Reload logs and records its error
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			if filepath.Base(ev.Name) != base {
				continue
			}
			if ev.Has(fsnotify.Write) || ev.Has(fsnotify.Create) || ev.Has(fsnotify.Rename) || ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Chmod) {
				deb.Trigger()
			}
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			d.logger.Warn("config watcher error", logKeyErr, err)
		}
	}
}
