package main

import (
	"errors"
	"path/filepath"
	"runtime"
)

// databaseFile is the name of the SQLite database in the data folder.
const databaseFile = "elysia.db"

// dbFlagHelp ends the help of every --db flag that defaults to the
// service's database.
const dbFlagHelp = "default: elysia.db in $XDG_DATA_HOME/elysia, ~/.local/share/elysia, ~/Library/Application Support/elysia or %LocalAppData%\\elysia; env ELYSIA_DATABASE_URL"

// dataDir returns the folder elysia keeps its database (and the key file
// beside it) in when no --db or ELYSIA_DATABASE_URL says otherwise:
// $XDG_DATA_HOME/elysia when set, else the platform's folder for a user's
// application data (~/.local/share/elysia on Linux and other Unix systems,
// ~/Library/Application Support/elysia on macOS, %LocalAppData%\elysia on
// Windows). It is never the working folder: desktop clients start `elysia
// mcp serve` in / or wherever they please. goos and getenv are
// runtime.GOOS and os.Getenv but in tests.
func dataDir(goos string, getenv func(string) string) (string, error) {
	if d := getenv("XDG_DATA_HOME"); filepath.IsAbs(d) { // the XDG spec ignores a relative one
		return filepath.Join(d, "elysia"), nil
	}
	if goos == "windows" {
		if d := getenv("LocalAppData"); d != "" {
			return filepath.Join(d, "elysia"), nil
		}
		return "", errors.New("%LocalAppData% is not set")
	}
	home := getenv("HOME")
	if home == "" {
		return "", errors.New("$HOME is not set")
	}
	if goos == "darwin" || goos == "ios" {
		return filepath.Join(home, "Library", "Application Support", "elysia"), nil
	}
	return filepath.Join(home, ".local", "share", "elysia"), nil
}

// databaseDSN is the data source name a command opens for its --db value
// dsn: dsn itself when given ("-", none, is the caller's to handle), else
// the SQLite file databaseFile in dataDir, which store.Open creates.
func databaseDSN(dsn string, getenv func(string) string) (string, error) {
	if dsn != "" {
		return dsn, nil
	}
	dir, err := dataDir(runtime.GOOS, getenv)
	if err != nil {
		return "", usageErr("no folder for the database (%v): give --db or set ELYSIA_DATABASE_URL", err)
	}
	return filepath.Join(dir, databaseFile), nil
}
