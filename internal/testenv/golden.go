package testenv

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// update is the -update flag of every test binary that imports testenv:
// Golden rewrites its files instead of comparing with them.
var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// Golden compares got with the golden file at path (relative to the
// package's folder, testdata/... by convention) and fails tb with the
// difference; under -update it writes got there instead, creating the
// folder.
func Golden(tb testing.TB, path string, got []byte) {
	tb.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			tb.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		tb.Errorf("%s differs from the golden file (-want +got; go test -update rewrites it):\n%s", path, diff)
	}
}

// GoldenResponse is Golden for an HTTP answer: its status and its JSON
// body, decoded, passed to edit when edit is not nil (to blank what
// changes from run to run, such as times), and indented.
func GoldenResponse(tb testing.TB, path string, status int, body []byte, edit func(v any)) {
	tb.Helper()
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		tb.Fatalf("response is not JSON: %v\n%s", err, body)
	}
	if edit != nil {
		edit(v)
	}
	got, err := json.MarshalIndent(map[string]any{"status": status, "body": v}, "", "  ")
	if err != nil {
		tb.Fatal(err)
	}
	Golden(tb, path, append(got, '\n'))
}
