package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
	"github.com/elysia-go/elysia/mcpgateway/mcpregistry"
)

// update is one entry update found: the entry, its reference and the
// entry the registry's latest version makes.
type update struct {
	name  string
	ref   mcpconfig.RegistryRef
	entry *mcpregistry.Entry // nil when nothing is newer
	newer string
}

// cmdMCPUpdate says which entries added from the registry have a newer
// version there, and rewrites each (only its command, url, headers,
// env, inputs and registry keys).
func cmdMCPUpdate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, config := newFlags("mcp update", stderr)
	dryRun := fs.Bool("dry-run", false, "only say what is newer; change nothing")
	set := setFlag{}
	fs.Var(set, "set", "NAME=VALUE: a value the new version needs; repeatable")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		return usageErr("mcp update: want at most one SERVER")
	}
	cfg, err := loadConfig(*config, false)
	if err != nil {
		return err
	}
	var targets []mcpconfig.ServerConfig
	for _, s := range cfg.Servers {
		if fs.NArg() == 1 && s.Name != fs.Arg(0) {
			continue
		}
		if s.Registry == nil {
			if fs.NArg() == 1 {
				return usageErr("mcp update: server %q of %s was not added from a registry (it has no \"registry\" key)", s.Name, *config)
			}
			continue
		}
		targets = append(targets, s)
	}
	if fs.NArg() == 1 && len(targets) == 0 {
		_, err := findServer(cfg, fs.Arg(0))
		return err
	}
	if len(targets) == 0 {
		_, _ = fmt.Fprintf(stdout, "no server of %s was added from a registry\n", termLine(*config))
		return nil
	}
	data, err := os.ReadFile(*config)
	if err != nil {
		return usageErr("%v", err)
	}
	current, err := mcpconfig.NewEdit(*config, data)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	c, err := registryClient()
	if err != nil {
		return err
	}
	var failed []error
	var todo []update
	for _, s := range targets {
		u, err := checkUpdate(ctx, c, current, s, set, *dryRun)
		if err != nil {
			failed = append(failed, fmt.Errorf("%s: %w", s.Name, err))
			continue
		}
		_, _ = fmt.Fprintf(stdout, "%s: %s\n", s.Name, termLine(u.newer))
		if u.entry != nil {
			todo = append(todo, u)
		}
	}
	if len(todo) > 0 && !*dryRun {
		err := mcpconfig.EditFile(*config, func(e *mcpconfig.Edit) error {
			for _, u := range todo {
				if err := e.Update(u.name, u.entry.JSON(), mcpregistry.OwnedKeys()); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return editError(err)
		}
		for _, u := range todo {
			_, _ = fmt.Fprintf(stdout, "updated %q in %s to %s\n", u.name, termLine(*config), termLine(u.entry.Registry.Version))
			describeEntry(stdout, u.entry)
		}
	}
	if len(failed) > 0 {
		var me *mcpregistry.MissingValueError
		if err := errors.Join(failed...); len(failed) == 1 && errors.As(err, &me) {
			return usageErr("%v: give it with --set %s=VALUE", err, me.Value.Name)
		}
		return failure(errors.Join(failed...))
	}
	return nil
}

// checkUpdate asks the registry for the latest version of s and, when it
// is newer and this is no dry run, makes its entry; u.newer says what was
// found.
func checkUpdate(ctx context.Context, c *mcpregistry.Client, current *mcpconfig.Edit, s mcpconfig.ServerConfig, set setFlag, dryRun bool) (update, error) {
	u := update{name: s.Name, ref: *s.Registry}
	rec, err := c.Get(ctx, u.ref.Name, "latest")
	if err != nil {
		return u, err
	}
	latest := rec.Server.Version
	switch cmp, ok := mcpregistry.CompareVersions(latest, u.ref.Version); {
	case latest == u.ref.Version || (ok && cmp == 0):
		u.newer = fmt.Sprintf("%s %s is the latest", u.ref.Name, u.ref.Version)
		return u, nil
	case ok && cmp < 0:
		u.newer = fmt.Sprintf("%s %s is newer than the registry's latest, %s; left as it is", u.ref.Name, u.ref.Version, latest)
		return u, nil
	}
	u.newer = fmt.Sprintf("%s %s → %s", u.ref.Name, u.ref.Version, latest)
	if rec.Status != "" && rec.Status != "active" {
		u.newer += " (" + rec.Status + " in the registry)"
	}
	if dryRun {
		return u, nil
	}
	old, err := current.Entry(s.Name)
	if err != nil {
		return u, err
	}
	values, perUser := entryValues(old)
	for k, v := range set {
		values[k] = v
	}
	entry, err := mcpregistry.NewEntry(&rec.Server, &mcpregistry.EntryOptions{Name: s.Name, PerUserSecrets: perUser, Values: values, Ask: valueAsker()})
	if err != nil {
		return u, err
	}
	entry.Description = "" // the operator's now
	u.entry = entry
	return u, nil
}

// entryValues reads the values an entry was given, so that an update
// keeps them: env and header values as written (not the references to
// inputs and user secrets, which the update writes again), and the value
// after each "--flag" of args. perUser is whether it uses ${user:...}.
func entryValues(entry []byte) (values map[string]string, perUser bool) {
	var e struct {
		Args    []string       `json:"args"`
		Env     map[string]any `json:"env"`
		Headers map[string]any `json:"headers"`
	}
	values = map[string]string{}
	perUser = strings.Contains(string(entry), "${user:")
	if json.Unmarshal(entry, &e) != nil {
		return values, perUser
	}
	for _, m := range []map[string]any{e.Env, e.Headers} {
		for k, v := range m {
			s, ok := v.(string)
			if ok && !strings.Contains(s, "${input:") && !strings.Contains(s, "${user:") {
				values[k] = s
			}
		}
	}
	for i := 0; i+1 < len(e.Args); i++ {
		if strings.HasPrefix(e.Args[i], "--") && !strings.HasPrefix(e.Args[i+1], "-") && !strings.Contains(e.Args[i+1], "${") {
			values[e.Args[i]] = e.Args[i+1]
		}
	}
	return values, perUser
}
