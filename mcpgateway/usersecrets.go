package mcpgateway

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/elysia-go/elysia/mcpgateway/internal/session"
	"github.com/elysia-go/elysia/mcpgateway/mcpauth"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// UserSecrets gives the secrets users set for themselves (PUT
// /users/:user/secrets/:name in the service), which mcp.json takes as
// ${user:NAME} in headers and in env of stdio servers. The service backs it
// with its encrypted store, shared by every replica.
//
// Secret returns the value user set under name, or an error matching
// ErrNoSecret (errors.Is) when there is none; any other error is a failure
// to read, and fails the call. The gateway asks on every call of a server
// that takes user secrets (so a changed or deleted secret is in force at
// the next call, on every replica), bounded by the call's ctx, and never
// logs or returns the value. Implementations must be safe for concurrent
// use, must not put values in their errors, and must never return one
// user's secret for another.
type UserSecrets interface {
	Secret(ctx context.Context, user, name string) (string, error)
}

// secretRequiredError says which secrets user must set before using the
// server. It matches errSecretRequired and mcpauth.ErrSignInRequired.
type secretRequiredError struct {
	Server string
	User   string
	// Names are the secrets missing, sorted.
	Names []string
}

func (e *secretRequiredError) Error() string {
	var puts []string
	for _, n := range e.Names {
		puts = append(puts, fmt.Sprintf("PUT /users/%s/secrets/%s", e.User, n))
	}
	return fmt.Sprintf("user %q must set secret %s for server %q (%s)",
		e.User, strings.Join(e.Names, ", "), e.Server, strings.Join(puts, ", "))
}

// Is reports whether target is errSecretRequired or mcpauth.ErrSignInRequired.
func (e *secretRequiredError) Is(target error) bool {
	return target == errSecretRequired || target == mcpauth.ErrSignInRequired
}

// userSecrets reads every secret of user the server takes, bounded by
// ctx. A missing one is a *secretRequiredError naming all that are
// missing; with no UserSecrets, all are.
func (g *Gateway) userSecrets(ctx context.Context, user string) (map[string]string, error) {
	names := g.cfg.UserSecretNames()
	vals := make(map[string]string, len(names))
	var missing []string
	for _, name := range names {
		if g.opts.UserSecrets == nil {
			missing = append(missing, name)
			continue
		}
		v, err := g.opts.UserSecrets.Secret(ctx, user, name)
		switch {
		case errors.Is(err, ErrNoSecret):
			missing = append(missing, name)
		case err != nil:
			return nil, fmt.Errorf("read secret %s of user %q: %w", name, user, err)
		default:
			vals[name] = v
		}
	}
	if len(missing) > 0 {
		return nil, &secretRequiredError{Server: g.cfg.Name, User: user, Names: missing}
	}
	return vals, nil
}

// withUserSecrets returns cfg as one user's session uses it: every
// UserValue filled in with vals, and the values (each secret, and each
// whole header or env value that holds one) added to Secrets, so that the
// user's session masks them like every other secret.
func withUserSecrets(cfg mcpconfig.ServerConfig, vals map[string]string) mcpconfig.ServerConfig {
	if len(cfg.Copies) > 0 {
		copies := make([]mcpconfig.ServerConfig, len(cfg.Copies))
		for i, c := range cfg.Copies {
			copies[i] = withUserSecrets(c, vals)
			cfg.Secrets = append(slices.Clone(cfg.Secrets), copies[i].Secrets...)
		}
		cfg.Copies = copies
	}
	if len(cfg.UserValues) == 0 {
		if len(cfg.Copies) > 0 {
			cfg.Secrets = sortedSecrets(cfg.Secrets)
		}
		return cfg
	}
	cfg.Headers, cfg.Env = maps.Clone(cfg.Headers), maps.Clone(cfg.Env)
	secrets := slices.Clone(cfg.Secrets)
	for key, uv := range cfg.UserValues {
		var b strings.Builder
		for _, p := range uv {
			if p.Secret == "" {
				b.WriteString(p.Text)
				continue
			}
			b.WriteString(vals[p.Secret])
			secrets = append(secrets, vals[p.Secret])
		}
		field, name, _ := strings.Cut(key, ".")
		if field == "env" {
			cfg.Env[name] = b.String()
		} else {
			cfg.Headers[name] = b.String()
		}
		secrets = append(secrets, b.String())
	}
	cfg.Secrets = sortedSecrets(secrets)
	return cfg
}

// sortedSecrets returns secrets without empty or repeated values, longest
// first, as mcpconfig keeps them.
func sortedSecrets(secrets []string) []string {
	secrets = slices.DeleteFunc(secrets, func(v string) bool { return v == "" })
	slices.SortFunc(secrets, func(a, b string) int { return cmp.Or(cmp.Compare(len(b), len(a)), strings.Compare(a, b)) })
	return slices.Compact(secrets)
}

// userErr masks err, an error of g's conn about a call a user's session
// made, for the user ctx names (maskFor): g's conn masks the server's
// secrets only, and a user's error must hide that user's own (and only
// theirs, so that nobody can test a guess at another's). Other errors
// pass unchanged.
func (g *Gateway) userErr(ctx context.Context, err error) error {
	se, ok := err.(*session.ServerError)
	if !ok || !g.cfg.TakesUserSecrets() {
		return err
	}
	return se.Remask(func(s string) string { return g.maskFor(ctx, s) })
}
