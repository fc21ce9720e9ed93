//go:build linux

package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/elysia-go/elysia/internal/testenv"
)

// smallDisk mounts a tmpfs of size bytes on a folder of its own, unmounted
// when t ends, and returns the folder. Mounting needs root (CAP_SYS_ADMIN),
// which CI has: elsewhere the test is skipped, and under CI=true it fails.
func smallDisk(t *testing.T, size int) string {
	t.Helper()
	testenv.Integration(t)
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		if errors.Is(err, syscall.EPERM) && os.Geteuid() == 0 {
			// Root without CAP_SYS_ADMIN (a container): a privilege no
			// install can give, so not a missing part CI should fail on.
			t.Skipf("mount a tmpfs for a full disk: %v (root without CAP_SYS_ADMIN)", err)
		}
		testenv.Missing(t, "mount a tmpfs for a full disk (needs root): %v", err)
	}
	// Registered after TempDir's removal, so it runs before it; and before
	// the cleanups registered later (closing the store), so after them.
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
			_ = syscall.Unmount(dir, syscall.MNT_DETACH) // never leave it behind
		}
	})
	return dir
}

// TestFullDiskRecovers fills, for real, the disk a SQLite database is on
// (a tmpfs of 2 MiB, smaller than the write-ahead log's checkpoint
// threshold, as a full disk leaves a log that no checkpoint can empty):
// saves fail cleanly, with ErrUnavailable; once a file is deleted, every
// save succeeds again, many more than the space freed would hold in the
// log alone. TestPingFullSQLite's max_page_count does not show this: it
// stops the database file growing, not the write-ahead log.
func TestFullDiskRecovers(t *testing.T) {
	dir := smallDisk(t, 2<<20)
	// What the operator deletes once the disk is full.
	other := filepath.Join(dir, "other")
	if err := os.WriteFile(other, make([]byte, 512<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	s := openStore(t, filepath.Join(dir, "elysia.db"))
	ctx := t.Context()
	var limit int64
	if err := s.db.QueryRowContext(ctx, `PRAGMA journal_size_limit`).Scan(&limit); err != nil {
		t.Fatal(err)
	}
	if limit < 0 {
		t.Errorf("journal_size_limit is %d: the write-ahead log is never cut back", limit)
	}
	c := &Conversation{UserID: "alice", ID: "c1"}
	save := func(queryID string) error {
		text := strings.Repeat("x", 4<<10)
		return s.SaveQuery(ctx, c, &Turn{Messages: json.RawMessage(`[{"role":"user","content":"` + queryID + `"}]`)},
			queryID, []NewEvent{{Envelope: json.RawMessage(`{"query":"` + queryID + `","text":"` + text + `"}`)}})
	}

	saved := 0
	var err error
	for ; saved < 1000; saved++ {
		if err = save(fmt.Sprintf("fill%d", saved)); err != nil {
			break
		}
	}
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("save %d filling the disk: got %v, want ErrUnavailable", saved+1, err)
	}
	for i := range 3 {
		if err := save(fmt.Sprintf("full%d", i)); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("save on a full disk: got %v, want ErrUnavailable", err)
		}
	}

	if err := os.Remove(other); err != nil {
		t.Fatal(err)
	}
	const n = 20
	failed := 0
	for i := range n {
		if err := save(fmt.Sprintf("freed%d", i)); err != nil {
			t.Logf("save %d of %d once space was freed: %v", i+1, n, err)
			failed++
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d saves failed once space was freed (%d saves filled the disk), want none", failed, n, saved)
	}
	turns, err := s.Turns(ctx, c.UserID, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(turns), saved+n-failed; got != want {
		t.Errorf("%d turns saved, want %d", got, want)
	}
}
