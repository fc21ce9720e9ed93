package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/elysia-go/elysia/mcpgateway/mcpauth"
	"github.com/elysia-go/elysia/store"
)

// maxTokenFile caps the token file, read or written: tokens come from
// authorization servers, and a file past the cap is refused rather than
// read whole.
const maxTokenFile = 8 << 20

// tokenFileAD is the additional data the token file is sealed with.
var tokenFileAD = []byte("elysia cli token file")

// tokenFile is the CLI's TokenStore: one file in the user's config folder
// (ELYSIA_TOKEN_FILE overrides it), so that `elysia mcp login` serves later
// commands. Its content (tokens and client secrets) is sealed with
// AES-256-GCM as the service's store seals them, under ELYSIA_SECRET_KEY
// or else the key file secret.key beside it (mode 0600, made on the first
// write). A token file from before sealing (clear JSON) is read once and
// rewritten sealed. Each method reads and rewrites the whole file, through
// a temporary file of a random name in the same folder (made with O_EXCL
// and mode 0600, so no stale file or symlink is written through) renamed
// over it.
type tokenFile struct {
	path string
	// keyText is ELYSIA_SECRET_KEY; empty: the key file.
	keyText string
	// mu guards the file within the process, and sealer.
	mu     sync.Mutex
	sealer *store.Sealer // nil until the key is needed
}

var _ mcpauth.TokenStore = (*tokenFile)(nil)

func newTokenFile() (*tokenFile, error) {
	key := os.Getenv("ELYSIA_SECRET_KEY")
	if p := os.Getenv("ELYSIA_TOKEN_FILE"); p != "" {
		return &tokenFile{path: p, keyText: key}, nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return nil, usageErr("no folder for the sign-in tokens (%v); set ELYSIA_TOKEN_FILE", err)
	}
	return &tokenFile{path: filepath.Join(dir, "elysia", "tokens.json"), keyText: key}, nil
}

func tokenFileKey(k mcpauth.TokenKey) string { return k.User + "\x00" + k.Server }

// keyPath is the key file beside the token file.
func (f *tokenFile) keyPath() string { return filepath.Join(filepath.Dir(f.path), store.KeyFileName) }

// key returns the Sealer of the file's key, reading (or making) it once.
func (f *tokenFile) key() (*store.Sealer, error) {
	if f.sealer != nil {
		return f.sealer, nil
	}
	var key []byte
	var err error
	if strings.TrimSpace(f.keyText) != "" {
		if key, err = store.ParseSecretKey(f.keyText); err != nil {
			return nil, usageErr("ELYSIA_SECRET_KEY: %v", err)
		}
	} else {
		if err := os.MkdirAll(filepath.Dir(f.path), 0o700); err != nil {
			return nil, err
		}
		if key, err = store.KeyFile(f.keyPath()); err != nil {
			return nil, usageErr("the token file's key: %v", err)
		}
	}
	s, err := store.NewSealer(key)
	if err != nil {
		return nil, err
	}
	f.sealer = s
	return s, nil
}

// read returns the tokens in the file; none when there is no file. A clear
// file (from before sealing) is rewritten sealed at once.
func (f *tokenFile) read() (map[string]*mcpauth.Token, error) {
	file, err := os.Open(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]*mcpauth.Token{}, nil
	}
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(file, maxTokenFile+1))
	_ = file.Close() // read-only: nothing to lose
	switch {
	case err != nil:
		return nil, fmt.Errorf("read token file %s: %w", f.path, err)
	case len(data) > maxTokenFile:
		return nil, fmt.Errorf("token file %s is over %d bytes; remove it and sign in again", f.path, maxTokenFile)
	}
	text := strings.TrimSpace(string(data))
	m := map[string]*mcpauth.Token{}
	if !store.IsSealed(text) {
		if json.Unmarshal(data, &m) != nil {
			return nil, fmt.Errorf("%s: not a token file", f.path)
		}
		if err := f.write(m); err != nil {
			return nil, fmt.Errorf("seal the clear token file %s: %w", f.path, err)
		}
		return m, nil
	}
	s, err := f.key()
	if err != nil {
		return nil, err
	}
	plain, err := s.Open(text, tokenFileAD)
	if err != nil {
		where := "ELYSIA_SECRET_KEY"
		if strings.TrimSpace(f.keyText) == "" {
			where = f.keyPath()
		}
		return nil, fmt.Errorf("%w: token file %s does not open with the key of %s (%v): it was sealed with another key, or changed; remove it and sign in again",
			store.ErrWrongKey, f.path, where, err)
	}
	if json.Unmarshal(plain, &m) != nil {
		return nil, fmt.Errorf("%s: not a token file", f.path)
	}
	return m, nil
}

// write seals m into a new temporary file beside the token file, then
// renames it over the token file.
func (f *tokenFile) write(m map[string]*mcpauth.Token) error {
	s, err := f.key()
	if err != nil {
		return err
	}
	plain, err := json.Marshal(m)
	if err != nil {
		return err
	}
	text := s.Seal(plain, tokenFileAD) + "\n"
	if len(text) > maxTokenFile {
		return fmt.Errorf("token file %s would be %d bytes, over %d; sign out of a server", f.path, len(text), maxTokenFile)
	}
	dir := filepath.Dir(f.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	// CreateTemp opens a new name with O_EXCL and mode 0600: never a file or
	// a symlink that was there before.
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(f.path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write token file: %w", err)
	}
	_, err = tmp.WriteString(text)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), f.path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name()) // best effort: the rename did not happen
		return fmt.Errorf("write token file %s: %w", f.path, err)
	}
	// Older versions wrote through path.tmp, which a crash could leave
	// behind holding clear tokens. Remove unlinks a symlink, never its
	// target.
	_ = os.Remove(f.path + ".tmp")
	return nil
}

// Get returns the token of key, or mcpauth.ErrNoToken.
func (f *tokenFile) Get(_ context.Context, key mcpauth.TokenKey) (*mcpauth.Token, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, err := f.read()
	if err != nil {
		return nil, err
	}
	t, ok := m[tokenFileKey(key)]
	if !ok || t == nil {
		return nil, mcpauth.ErrNoToken
	}
	return t, nil
}

// Put stores tok under key.
func (f *tokenFile) Put(_ context.Context, key mcpauth.TokenKey, tok *mcpauth.Token) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, err := f.read()
	if err != nil {
		return err
	}
	m[tokenFileKey(key)] = tok
	return f.write(m)
}

// Delete forgets key's token.
func (f *tokenFile) Delete(_ context.Context, key mcpauth.TokenKey) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, err := f.read()
	if err != nil {
		return err
	}
	if _, ok := m[tokenFileKey(key)]; !ok {
		return nil
	}
	delete(m, tokenFileKey(key))
	return f.write(m)
}
