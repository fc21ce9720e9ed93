package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/elysia-go/elysia/tools"
)

// TestTermText checks that escape sequences and controls are dropped
// whole, and that ordinary text around them is kept.
func TestTermText(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain", "hello, world\n\tindented", "hello, world\n\tindented"},
		{"unicode kept", "café 🎉 日本語 ½", "café 🎉 日本語 ½"},
		{"OSC 52 clipboard, BEL", "a\x1b]52;c;cm0gLXJmIH4=\x07b", "ab"},
		{"OSC 52 clipboard, ST", "a\x1b]52;c;cm0gLXJmIH4=\x1b\\b", "ab"},
		{"OSC 8 hyperlink", "\x1b]8;;http://evil\x1b\\click\x1b]8;;\x1b\\", "click"},
		{"clear screen", "x\x1b[2Jy", "xy"},
		{"cursor move", "x\x1b[10;20Hy\x1b[?25l", "xy"},
		{"colour", "\x1b[1;31mred\x1b[0m", "red"},
		{"C1 CSI", "a\u009b31mb", "ab"},
		{"C1 OSC", "a\u009d52;c;eA==\u009cb", "ab"},
		{"DCS", "a\x1bP1$r0m\x1b\\b", "ab"},
		{"APC", "a\x1b_secret\x1b\\b", "ab"},
		{"short ESC forms", "a\x1bcb\x1b7c\x1b(Bd", "abcd"},
		{"lone ESC at the end", "abc\x1b", "abc"},
		{"unterminated OSC", "abc\x1b]52;c;AAAA", "abc"},
		{"OSC cut by another sequence", "a\x1b]0;title\x1b[2Jb", "ab"},
		{"carriage return, backspace, bell, NUL", "ok\rfake\b\x07\x00!", "okfake!"},
		{"DEL", "a\x7fb", "ab"},
		{"bidi overrides and isolates", "a\u202ebc\u202c\u2066d\u2069", "abcd"},
		{"raw C1 byte", "a\x9b31mb", "a\ufffd31mb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := termText(tt.in); got != tt.want {
				t.Errorf("termText(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
	if got := termLine("a\nb\tc\x1b[2J"); got != "a b c" {
		t.Errorf("termLine = %q, want %q", got, "a b c")
	}
}

// TestTermJSON: JSON output and the JSON log keep every value, with DEL,
// C1 and bidi controls escaped; json.Marshal itself escapes C0 controls.
func TestTermJSON(t *testing.T) {
	in := "x\x1b]52;c;AA\x07 \u009b31m \u202e \x7f é🎉"
	b, err := json.Marshal(map[string]string{"text": in})
	if err != nil {
		t.Fatal(err)
	}
	out := termJSON(b)
	var back map[string]string
	if err := json.Unmarshal(out, &back); err != nil || back["text"] != in {
		t.Fatalf("termJSON changed the value: %v, %q", err, back["text"])
	}
	if s := string(out); s != termText(s) || !strings.Contains(s, "é🎉") {
		t.Errorf("termJSON left controls or dropped text: %q", s)
	}

	var logged bytes.Buffer
	logger, err := newLogger(&logged, "warn", "auto") // the log of serve and query
	if err != nil {
		t.Fatal(err)
	}
	logger.Warn("server said", "line", in)
	var rec map[string]any
	if err := json.Unmarshal(logged.Bytes(), &rec); err != nil || rec["line"] != in {
		t.Fatalf("logged line = %v, %v", rec, err)
	}
	if s := strings.TrimSuffix(logged.String(), "\n"); s != termText(s) {
		t.Errorf("the JSON log holds controls: %q", s)
	}
}

// FuzzTerminalText: termText's output holds no ESC, no C0 control but
// newline and tab, no DEL, no C1 control, no bidi override and only valid
// UTF-8; it is idempotent; and printable ASCII passes unchanged.
func FuzzTerminalText(f *testing.F) {
	for _, s := range []string{"", "plain", "\x1b]52;c;AA\x07x", "\x1b]8;;http://evil\x1b\\y", "\x1b[2J", "\u009b31m", "\x9b31m",
		"\u202eevil", "a\x1bPdcs\x1b\\b", "\x1b", "\x1b]", "\u009d", "é🎉\r\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := termText(s)
		if !utf8.ValidString(out) {
			t.Fatalf("termText(%q) = %q: invalid UTF-8", s, out)
		}
		for _, r := range out {
			if r != '\n' && r != '\t' && unsafeRune(r) {
				t.Fatalf("termText(%q) = %q: holds %U", s, out, r)
			}
		}
		if again := termText(out); again != out {
			t.Fatalf("termText is not idempotent on %q: %q then %q", s, out, again)
		}
		if plain(s) && out != s {
			t.Fatalf("termText changed plain text %q to %q", s, out)
		}
		if line := termLine(s); strings.ContainsAny(line, "\n\t") || termText(line) != line {
			t.Fatalf("termLine(%q) = %q", s, line)
		}
		if j := termJSON([]byte(s)); !utf8.Valid(j) || strings.ContainsFunc(string(j), func(r rune) bool { return r != '\n' && unsafeRune(r) }) {
			t.Fatalf("termJSON(%q) = %q", s, j)
		}
	})
}

// TestAskerPrintsNoControls: a server's question, its form's titles and
// defaults, and its URL reach the terminal without their controls.
func TestAskerPrintsNoControls(t *testing.T) {
	const evil = "see\x1b]52;c;AA\x07 \x1b[2Jthis\u202e"
	for _, q := range []tools.ElicitationPayload{
		{Server: "notes" + evil, Mode: "form", Message: "question " + evil, RequestedSchema: map[string]any{"properties": map[string]any{
			"name": map[string]any{"type": "string", "title": "title " + evil, "default": "default " + evil}}}},
		{Server: "notes", Mode: "url", Message: "open " + evil, URL: "https://example.com/\x1b]8;;http://evil\x1b\\x"},
	} {
		var out bytes.Buffer
		a := &terminalAsker{in: bufio.NewReader(strings.NewReader("\n")), out: &out, interactive: true}
		if ans, _ := a.answer(t.Context(), q, nil); ans.Action != tools.ElicitAccept {
			t.Errorf("answer = %+v, want accept", ans)
		}
		if got := out.String(); got != termText(got) || !strings.Contains(got, "see this") {
			t.Errorf("the asker printed %q", got)
		}
	}
}
