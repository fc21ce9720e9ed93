package mcpconfig

import (
	"cmp"
	"log/slog"
	"maps"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
)

// masked is what a secret is replaced with.
const masked = "***"

// minMaskLen is the shortest secret masked inside other text. Replacing a
// one- to three-character value ("1", "on", "dev") everywhere it occurs
// would mangle every message while hiding nothing worth hiding, so shorter
// secrets are masked only when they are the whole text.
const minMaskLen = 4

// Mask returns text with every secret of s replaced by "***", longest
// first so that a secret containing another is hidden whole. Secrets of at
// least four bytes are replaced wherever they occur, also in their URL
// query-escaped form; shorter ones only when they are the whole text
// (surrounding white space aside). The userinfo of every URL in the
// server's url, args and templates counts as a secret as well: its
// password is masked ("http://user:***@host"), or the user name when there
// is no password, since that is how tokens are put in URLs
// ("https://***@host"). Mask is safe for concurrent use.
func (s ServerConfig) Mask(text string) string { return s.Masker()(text) }

// Masker returns Mask with its work done once: a gateway masks every log
// record and error, so it keeps the function rather than rebuilding the
// replacer each time. The function is safe for concurrent use.
func (s ServerConfig) Masker() func(string) string {
	whole := make(map[string]bool, len(s.Secrets))
	var pairs [][2]string // old, new
	for _, sec := range s.Secrets {
		if sec == "" {
			continue
		}
		whole[sec] = true
		if len(sec) < minMaskLen {
			continue
		}
		pairs = append(pairs, [2]string{sec, masked})
		if esc := url.QueryEscape(sec); esc != sec {
			pairs = append(pairs, [2]string{esc, masked})
		}
	}
	for _, ui := range s.userinfos() {
		pairs = append(pairs, ui.pairs...)
		for _, sec := range ui.secrets {
			whole[sec] = true
		}
	}
	if len(whole) == 0 {
		return func(text string) string { return text }
	}
	// strings.Replacer tries its pairs in argument order at each position,
	// so sorting by length makes the longest secret win.
	slices.SortStableFunc(pairs, func(a, b [2]string) int { return cmp.Compare(len(b[0]), len(a[0])) })
	var r *strings.Replacer
	if len(pairs) > 0 {
		args := make([]string, 0, 2*len(pairs))
		for _, p := range pairs {
			args = append(args, p[0], p[1])
		}
		r = strings.NewReplacer(args...)
	}
	return func(text string) string {
		if text == "" {
			return text
		}
		if whole[strings.TrimSpace(text)] {
			return masked
		}
		if r == nil {
			return text
		}
		return r.Replace(text)
	}
}

// userinfo is the secret part of one URL's userinfo and the replacements
// that hide it.
type userinfo struct {
	secrets []string    // the password, or the user name when there is none, as written and decoded
	pairs   [][2]string // "user:pass@" → "user:***@", in the forms it may be shown in
}

// userinfos finds the userinfo of every URL written in the server's url,
// args and templates (a literal "http://user:pass@host/mcp" is not a
// substitution, so nothing else marks it as a secret).
func (s ServerConfig) userinfos() []userinfo {
	texts := append([]string{s.URL, s.Command}, s.Args...)
	for _, k := range slices.Sorted(maps.Keys(s.Templates)) {
		texts = append(texts, s.Templates[k])
	}
	var out []userinfo
	seen := make(map[string]bool)
	for _, t := range texts {
		for _, raw := range urlUserinfos(t) {
			if seen[raw] {
				continue
			}
			seen[raw] = true
			out = append(out, maskUserinfo(raw))
		}
	}
	return out
}

// urlUserinfos returns the raw userinfo (before "@") of every
// "scheme://userinfo@host" in text.
func urlUserinfos(text string) []string {
	var out []string
	for {
		i := strings.Index(text, "://")
		if i < 0 {
			return out
		}
		text = text[i+3:]
		end := strings.IndexAny(text, "/?#\"' \t\r\n")
		if end < 0 {
			end = len(text)
		}
		if at := strings.LastIndexByte(text[:end], '@'); at > 0 {
			out = append(out, text[:at])
		}
		text = text[end:]
	}
}

// maskUserinfo builds the replacements for one raw userinfo: as written,
// as net/url prints it again (re-escaped), and decoded. The user name is
// kept when there is a password, as url.URL.Redacted does.
func maskUserinfo(raw string) userinfo {
	user, pass, hasPass := strings.Cut(raw, ":")
	secret, shown := user, masked
	if hasPass {
		secret, shown = pass, user+":"+masked
	}
	forms, secrets := []string{raw}, []string{secret}
	if u, err := url.Parse("http://" + raw + "@h"); err == nil && u.User != nil {
		forms = append(forms, u.User.String())
		if p, ok := u.User.Password(); ok {
			forms = append(forms, u.User.Username()+":"+p)
			secrets = append(secrets, p)
		} else {
			forms = append(forms, u.User.Username())
			secrets = append(secrets, u.User.Username())
		}
	}
	var ui userinfo
	for _, f := range dedupe(forms) {
		ui.pairs = append(ui.pairs, [2]string{f + "@", shown + "@"})
	}
	for _, sec := range dedupe(secrets) {
		if sec == "" {
			continue
		}
		ui.secrets = append(ui.secrets, sec)
		if len(sec) >= minMaskLen {
			// Where the secret shows up out of its URL (a decoded password
			// in a server's message, say), it is masked as any other.
			ui.pairs = append(ui.pairs, [2]string{sec, masked})
		}
	}
	return ui
}

// dedupe returns list without repeats, in first-seen order.
func dedupe(list []string) []string {
	out := list[:0:0]
	for _, v := range list {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// DisplayConfig is the part of a server's config that /api/servers and the
// CLI show: templates instead of substituted values, secrets masked, and
// env and headers as key → "***". Its JSON keys match the appendix of
// DESIGN.md, so a response can embed it.
type DisplayConfig struct {
	// Command, Args and Cwd are a stdio server's, as written in mcp.json.
	Command string   `json:"command,omitempty"`
	Args    []string `json:"args,omitempty"`
	Cwd     string   `json:"cwd,omitempty"`
	// URL is an http or sse server's, as written in mcp.json.
	URL string `json:"url,omitempty"`
	// Env and Headers map each configured name to "***"; nil when empty.
	Env     map[string]string `json:"env,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// Copies are the server's copies, displayed the same way.
	Copies []DisplayConfig `json:"copies,omitempty"`
}

// Display returns what may be shown of s to a user: each field as written
// in mcp.json when it had a template (so "./bin/todo-mcp", not the
// resolved path, and "${input:token}", not the token), otherwise its value,
// always passed through Mask; Env and Headers values are all "***".
func (s ServerConfig) Display() DisplayConfig {
	show := func(key, val string) string {
		if t, ok := s.Templates[key]; ok {
			val = t
		}
		return s.Mask(val)
	}
	d := DisplayConfig{
		Command: show("command", s.Command),
		Cwd:     show("cwd", s.Cwd),
		URL:     show("url", s.URL),
		Env:     maskedMap(s.Env),
		Headers: maskedMap(s.Headers),
	}
	for i, a := range s.Args {
		d.Args = append(d.Args, show("args["+strconv.Itoa(i)+"]", a))
	}
	for _, c := range s.Copies {
		d.Copies = append(d.Copies, c.Display())
	}
	return d
}

// maskedMap returns m's keys with every value "***", or nil.
func maskedMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k := range m {
		out[k] = masked
	}
	return out
}

// LogValue implements slog.LogValuer: a ServerConfig logged with slog shows
// its name, transport, the displayed command, args, cwd and url, the keys
// of env and headers with "***" values, and why it is unresolved — never a
// secret.
func (s ServerConfig) LogValue() slog.Value {
	d := s.Display()
	attrs := []slog.Attr{slog.String("name", s.Name), slog.String("transport", s.Transport)}
	if !s.Enabled {
		attrs = append(attrs, slog.Bool("enabled", false))
	}
	for _, f := range []struct{ key, val string }{{"command", d.Command}, {"cwd", d.Cwd}, {"url", d.URL}} {
		if f.val != "" {
			attrs = append(attrs, slog.String(f.key, f.val))
		}
	}
	if len(d.Args) > 0 {
		attrs = append(attrs, slog.Any("args", d.Args))
	}
	for _, m := range []struct {
		key  string
		vals map[string]string
	}{{"env", d.Env}, {"headers", d.Headers}} {
		if len(m.vals) == 0 {
			continue
		}
		var group []slog.Attr
		for _, k := range slices.Sorted(maps.Keys(m.vals)) {
			group = append(group, slog.String(k, masked))
		}
		attrs = append(attrs, slog.Attr{Key: m.key, Value: slog.GroupValue(group...)})
	}
	if s.Unresolved != "" {
		attrs = append(attrs, slog.String("unresolved", s.Mask(s.Unresolved)))
	}
	return slog.GroupValue(attrs...)
}

// Equal reports whether s and o configure the same server, so a reload
// can keep the running gateway. Line and Column are ignored (adding a
// server above another does not change it); nil and empty slices and maps
// are equal.
func (s ServerConfig) Equal(o ServerConfig) bool {
	return s.Name == o.Name && s.Description == o.Description && s.Transport == o.Transport &&
		s.Command == o.Command && slices.Equal(s.Args, o.Args) && maps.Equal(s.Env, o.Env) &&
		s.Cwd == o.Cwd && s.URL == o.URL && maps.Equal(s.Headers, o.Headers) &&
		s.Enabled == o.Enabled && s.Branch == o.Branch &&
		slices.Equal(s.Allow, o.Allow) && slices.Equal(s.Deny, o.Deny) &&
		s.ConnectTimeout == o.ConnectTimeout && s.CallTimeout == o.CallTimeout && s.Eager == o.Eager &&
		maps.Equal(s.Templates, o.Templates) && slices.Equal(s.Secrets, o.Secrets) &&
		s.Unresolved == o.Unresolved && s.OAuth.equal(o.OAuth) && s.PerUser == o.PerUser &&
		maps.EqualFunc(s.UserValues, o.UserValues, slices.Equal) &&
		s.MaxCallTime == o.MaxCallTime && s.ElicitationTimeout == o.ElicitationTimeout &&
		s.Sampling == o.Sampling && slices.Equal(s.Roots, o.Roots) && s.LogLevel == o.LogLevel &&
		s.ProtocolVersion == o.ProtocolVersion && s.MaxMessageSize == o.MaxMessageSize &&
		s.SamplingPerCall == o.SamplingPerCall && s.SamplingPerMinute == o.SamplingPerMinute &&
		s.SamplingMaxInput == o.SamplingMaxInput && equalPrefix(s.Prefix, o.Prefix) &&
		equalRegistry(s.Registry, o.Registry) && s.Pin == o.Pin &&
		s.Policy == o.Policy && slices.EqualFunc(s.Copies, o.Copies, ServerConfig.Equal)
}

// inheritedEnv is what a stdio child takes from the service's environment:
// the MCP TypeScript SDK's default list, and nothing else, so the service's
// own secrets (OPENAI_API_KEY, ELYSIA_API_KEYS, ...) never reach a child.
var inheritedEnv = []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "TMPDIR"}

// ChildEnv returns the environment of cfg's stdio child as KEY=VALUE
// pairs sorted by key: HOME, LOGNAME, PATH, SHELL, TERM, USER, LANG and
// TMPDIR as lookup finds them, overridden and extended by cfg.Env. A nil
// lookup means os.LookupEnv.
func ChildEnv(cfg ServerConfig, lookup func(string) (string, bool)) []string {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	env := make(map[string]string, len(inheritedEnv)+len(cfg.Env))
	for _, k := range inheritedEnv {
		if v, ok := lookup(k); ok {
			env[k] = v
		}
	}
	maps.Copy(env, cfg.Env)
	out := make([]string, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, k+"="+env[k])
	}
	return out
}
