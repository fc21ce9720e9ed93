package discovery

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/elysia-go/elysia/tree"
)

// The benchmarks of this file configure stdio servers whose command is a
// script that would create a marker file if it ever ran: gateways are
// lazy, and neither loading nor reloading may start a server.

// neverRun writes, in dir, a script that creates a marker file when run; it
// returns the script's path and the marker's.
func neverRun(tb testing.TB, dir string) (script, marker string) {
	tb.Helper()
	script, marker = filepath.Join(dir, "never-run.sh"), filepath.Join(dir, "server-started")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ntouch '"+marker+"'\nexit 1\n"), 0o700); err != nil {
		tb.Fatal(err)
	}
	return script, marker
}

func checkNeverRun(tb testing.TB, marker string) {
	tb.Helper()
	if _, err := os.Stat(marker); err == nil {
		tb.Fatalf("a server was started (%s exists); gateways must be lazy", marker)
	}
}

// benchServers is an mcp.json body: n servers named server_000... running
// script, then one per extra name.
func benchServers(script string, n int, extra ...string) []byte {
	var b strings.Builder
	b.WriteString(`{"servers": {`)
	entry := func(name string, i int) {
		fmt.Fprintf(&b, "\n  %q: {\"type\": \"stdio\", \"command\": %q, \"args\": [\"--db\", \"todos-%d.db\"], \"description\": \"Benchmark server %d\"}",
			name, script, i, i)
	}
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		entry(fmt.Sprintf("server_%03d", i), i)
	}
	for i, name := range extra {
		if n+i > 0 {
			b.WriteByte(',')
		}
		entry(name, n+i)
	}
	b.WriteString("\n}}\n")
	return []byte(b.String())
}

// saveRenamed writes path as editors that rename on save do.
func saveRenamed(tb testing.TB, path string, body []byte) {
	tb.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, body, 0o600); err != nil {
		tb.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkReloadToTree measures the time from saving mcp.json (write a
// temporary file, rename it over the original) with one new server, in a
// file of 10, to that server's gateway appearing in a live conversation's
// tree JSON. The debounce is the default (100 ms). The tree is polled in a
// tight loop (runtime.Gosched between looks), never with a sleep.
func BenchmarkReloadToTree(b *testing.B) {
	dir := b.TempDir()
	script, marker := neverRun(b, dir)
	path := filepath.Join(dir, "mcp.json")
	saveRenamed(b, path, benchServers(script, 10))
	m := tree.NewManager(nil)
	d := New(path, m, nil)
	b.Cleanup(func() { _ = d.Close() })
	ctx := context.Background()
	if err := d.Load(ctx); err != nil {
		b.Fatal(err)
	}
	if err := d.Watch(); err != nil {
		b.Fatal(err)
	}
	conv, err := m.Conversation(ctx, "u", "c")
	if err != nil {
		b.Fatal(err)
	}
	i := 0
	for b.Loop() {
		name := fmt.Sprintf("added_%06d", i)
		i++
		want := []byte(`"mcp_` + name + `"`)
		saveRenamed(b, path, benchServers(script, 10, name))
		deadline := time.Now().Add(10 * time.Second)
		for {
			js, err := conv.Tree().MarshalJSON()
			if err != nil {
				b.Fatal(err)
			}
			if bytes.Contains(js, want) {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("%s did not reach the tree within 10 s: %s", name, js)
			}
			runtime.Gosched()
		}
	}
	b.ReportMetric(float64(b.Elapsed())/float64(time.Millisecond)/float64(b.N), "ms/op")
	checkNeverRun(b, marker)
}

// BenchmarkStartup100 measures start-up with 100 configured servers:
// building a tree.Manager and a Discovery, Load, and rendering one
// conversation's tree JSON. No server process may start.
func BenchmarkStartup100(b *testing.B) {
	dir := b.TempDir()
	script, marker := neverRun(b, dir)
	path := filepath.Join(dir, "mcp.json")
	saveRenamed(b, path, benchServers(script, 100))
	ctx := context.Background()
	want := []byte(`"mcp_server_099"`)
	for b.Loop() {
		m := tree.NewManager(nil)
		d := New(path, m, nil)
		if err := d.Load(ctx); err != nil {
			b.Fatal(err)
		}
		conv, err := m.Conversation(ctx, "u", "c")
		if err != nil {
			b.Fatal(err)
		}
		js, err := conv.Tree().MarshalJSON()
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if !bytes.Contains(js, want) {
			b.Fatalf("tree lacks %s: %s", want, js)
		}
		if err := d.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed())/float64(time.Millisecond)/float64(b.N), "ms/op")
	checkNeverRun(b, marker)
}
