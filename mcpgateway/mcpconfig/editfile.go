package mcpconfig

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// EditFile reads the mcp.json file at path (a missing file is a new, empty
// one), lets edit change it, and writes the result in its place atomically:
// a temporary file in the same folder, with the mode of the old file (0600
// for a new one), renamed over it, so that a reader (the service's file
// watcher) sees the old file or the new one, never half of one. A symbolic
// link is followed and the file it points to replaced.
//
// When the file was valid, the result must be too (Parse, without looking
// up environment variables or asking for inputs): an edit that would break
// it returns that *ConfigError and writes nothing. Nothing is written
// either when edit returns an error, when nothing changed, or when the file
// changed on disk in the meantime (ErrFileChanged).
func EditFile(path string, edit func(*Edit) error) error {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	data, err := os.ReadFile(path)
	mode := fs.FileMode(0o600)
	missing := errors.Is(err, fs.ErrNotExist)
	switch {
	case missing:
		data = nil
	case err != nil:
		return &ConfigError{File: path, Msg: "cannot read: " + err.Error(), Err: err}
	default:
		if fi, err := os.Stat(path); err == nil {
			mode = fi.Mode().Perm()
		}
	}
	quiet := &LoadOptions{LookupEnv: func(string) (string, bool) { return "", false }}
	_, parseErr := Parse(path, data, quiet)
	wasValid := missing || parseErr == nil
	e, err := NewEdit(path, data)
	if err != nil {
		return err
	}
	if err := edit(e); err != nil {
		return err
	}
	out := e.Bytes()
	if bytes.Equal(out, data) {
		return nil
	}
	if wasValid {
		if _, err := Parse(path, out, quiet); err != nil {
			return fmt.Errorf("the change would make %s invalid, so it was not written: %w", path, err)
		}
	}
	return writeAtomic(path, out, mode, data, missing)
}

// writeAtomic writes data to path through a temporary file renamed over
// it, unless path no longer holds was (or, when missing, exists now).
func writeAtomic(path string, data []byte, mode fs.FileMode, was []byte, missing bool) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp.Name()) // best effort: the write error is the one to report
		}
	}()
	if err := tmp.Chmod(mode); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	now, rerr := os.ReadFile(path)
	if (missing && !errors.Is(rerr, fs.ErrNotExist)) || (!missing && (rerr != nil || !bytes.Equal(now, was))) {
		return fmt.Errorf("%s: %w; nothing written, try again", path, ErrFileChanged)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // best effort: the rename is done; this only hastens it to disk
		_ = d.Close()
	}
	return nil
}
