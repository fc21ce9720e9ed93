package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"golang.org/x/term"
)

// Log formats (--log-format, ELYSIA_LOG_FORMAT).
const (
	logFormatAuto = "auto" // text on a terminal, else JSON
	logFormatText = "text" // one compact line per record, for a person
	logFormatJSON = "json" // one JSON object per record, for a machine
)

// logFormatEnv names the variable that sets --log-format's default.
const logFormatEnv = "ELYSIA_LOG_FORMAT"

// logFormatFlag adds --log-format to fs.
func logFormatFlag(fs *flag.FlagSet) *string {
	def := os.Getenv(logFormatEnv)
	if def == "" {
		def = logFormatAuto
	}
	return fs.String("log-format", def, "auto (text on a terminal, else JSON), text or json (env "+logFormatEnv+")")
}

// newLogger is the log of a command, written to w at level and above in
// format (auto, text or json).
func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, usageErr("--log-level: %v", err)
	}
	switch format {
	case logFormatAuto:
		if f, ok := w.(*os.File); !ok || !term.IsTerminal(int(f.Fd())) {
			format = logFormatJSON
		}
	case logFormatText, logFormatJSON:
	default:
		return nil, usageErr("--log-format %q: want auto, text or json", format)
	}
	// The log quotes servers (their stderr, their messages): what a
	// terminal may act on is escaped.
	if format == logFormatJSON {
		return slog.New(slog.NewJSONHandler(escapedWriter{w}, &slog.HandlerOptions{Level: l})), nil
	}
	return slog.New(&humanHandler{w: escapedWriter{w}, level: l, mu: &sync.Mutex{}}), nil
}

// accessLogMsg is the message of web's access log record, which the human
// format writes as "GET /path 200 1.2ms".
const accessLogMsg = "http request"

// humanHandler writes one compact line per record, for a person at a
// terminal: "15:04:05 INFO  listening addr=127.0.0.1:8000". A value with
// spaces, quotes or anything unprintable is quoted (strconv.Quote), so a
// terminal control cannot reach the terminal.
type humanHandler struct {
	w     io.Writer
	level slog.Leveler
	mu    *sync.Mutex // guards w; shared by the handler's derivations
	attrs []byte      // " k=v" of WithAttrs, formatted once
	group string      // "g." prefix of WithGroup
}

func (h *humanHandler) Enabled(_ context.Context, l slog.Level) bool {
	return l >= h.level.Level()
}

func (h *humanHandler) Handle(_ context.Context, r slog.Record) error {
	var b bytes.Buffer
	if !r.Time.IsZero() {
		b.WriteString(r.Time.Format(time.TimeOnly))
		b.WriteByte(' ')
	}
	fmt.Fprintf(&b, "%-5s ", r.Level.String())
	var rest []slog.Attr
	r.Attrs(func(a slog.Attr) bool {
		rest = append(rest, a)
		return true
	})
	if r.Message == accessLogMsg && h.group == "" {
		rest = accessLine(&b, rest)
	} else {
		b.WriteString(quoteUnprintable(r.Message))
	}
	attrs := h.attrs
	if r.Message == accessLogMsg {
		attrs = nil // web's component: the line says what it is
	}
	b.Write(attrs)
	for _, a := range rest {
		appendAttr(&b, h.group, a)
	}
	b.WriteByte('\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := h.w.Write(b.Bytes())
	return err
}

// accessLine writes an access log record as "GET /path 200 1.2ms" and
// returns its other attributes (the request and trace ids).
func accessLine(b *bytes.Buffer, attrs []slog.Attr) []slog.Attr {
	val := func(key string) string {
		for _, a := range attrs {
			if a.Key == key {
				return valueText(a.Value)
			}
		}
		return "?"
	}
	fmt.Fprintf(b, "%s %s %s %s", quoteIfNeeded(val("method")), quoteIfNeeded(val("path")), val("status"), val("duration"))
	return slices.DeleteFunc(attrs, func(a slog.Attr) bool {
		switch a.Key {
		case "method", "path", "status", "duration", "route", "component":
			return true
		}
		return false
	})
}

func (h *humanHandler) WithAttrs(as []slog.Attr) slog.Handler {
	var b bytes.Buffer
	b.Write(h.attrs)
	for _, a := range as {
		appendAttr(&b, h.group, a)
	}
	h2 := *h
	h2.attrs = b.Bytes()
	return &h2
}

func (h *humanHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	h2 := *h
	h2.group += name + "."
	return &h2
}

// appendAttr writes " prefix+key=value", a group's members each in turn.
func appendAttr(b *bytes.Buffer, prefix string, a slog.Attr) {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return
	}
	if a.Value.Kind() == slog.KindGroup {
		if a.Key != "" {
			prefix += a.Key + "."
		}
		for _, m := range a.Value.Group() {
			appendAttr(b, prefix, m)
		}
		return
	}
	b.WriteByte(' ')
	b.WriteString(quoteIfNeeded(prefix + a.Key))
	b.WriteByte('=')
	b.WriteString(quoteIfNeeded(valueText(a.Value)))
}

// valueText is a value as a person reads it; durations are rounded to
// three or four significant digits.
func valueText(v slog.Value) string {
	switch v.Kind() {
	case slog.KindDuration:
		return compactDuration(v.Duration()).String()
	case slog.KindTime:
		return v.Time().Format(time.RFC3339)
	}
	return v.String()
}

func compactDuration(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	case d >= time.Microsecond:
		return d.Round(time.Microsecond)
	}
	return d
}

// quoteUnprintable quotes s when it holds a rune that is not printable: a
// message reads as it is, spaces and all.
func quoteUnprintable(s string) string {
	if strings.ContainsFunc(s, func(r rune) bool { return r != ' ' && !unicode.IsPrint(r) }) {
		return strconv.Quote(s)
	}
	return s
}

// quoteIfNeeded quotes s when it is empty or holds a space, '=', '"' or a
// rune that is not printable.
func quoteIfNeeded(s string) string {
	if s == "" || strings.ContainsFunc(s, func(r rune) bool {
		return r == ' ' || r == '=' || r == '"' || !unicode.IsPrint(r)
	}) {
		return strconv.Quote(s)
	}
	return s
}
