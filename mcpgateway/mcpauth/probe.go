package mcpauth

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Probe sends the server an initialize without a token to read its
// challenge (the resource_metadata and scope of WWW-Authenticate); an
// empty challenge when it does not answer 401.
func (a *Authorizer) Probe(ctx context.Context) (Challenge, error) {
	body := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"elysia","version":"0"}}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.cfg.URL, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range a.cfg.Headers {
		req.Header.Set(k, v)
	}
	// The configured headers go with it: redirects within the server's
	// origin only, as for its sessions.
	resp, err := withRedirects(a.client, ServerRedirects(a.cfg.Name)).Do(req)
	if err != nil {
		return nil, fmt.Errorf("reach the server: %w", unwrapURLError(err))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		return Challenge{}, nil
	}
	return parseChallenge(resp.Header.Values("WWW-Authenticate")), nil
}
