package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
	"github.com/elysia-go/elysia/mcpgateway/mcpregistry"
	"github.com/elysia-go/elysia/tree"
	"github.com/elysia-go/elysia/web"
)

// gallery is the panel's "Add a server" (web.Gallery): the search of
// elysia mcp search and the entry of elysia mcp add, on the registry at
// $ELYSIA_REGISTRY_URL and the mcp.json the service watches, which then
// picks the entry up like any edit.
type gallery struct {
	config string
	// client is nil when $ELYSIA_REGISTRY_URL is unusable; err says why.
	client *mcpregistry.Client
	err    error
}

var _ web.Gallery = (*gallery)(nil)

// newGallery returns the gallery of the mcp.json at config.
func newGallery(config string) *gallery {
	c, err := registryClient()
	return &gallery{config: config, client: c, err: err}
}

// Search implements web.Gallery.
func (g *gallery) Search(ctx context.Context, words []string, limit int) (web.GallerySearch, error) {
	if g.client == nil {
		return web.GallerySearch{}, g.err
	}
	recs, err := g.client.Find(ctx, words, limit)
	if errors.Is(err, mcpregistry.ErrBadSearch) {
		return web.GallerySearch{}, fmt.Errorf("%w: %v", web.ErrBadEntry, err)
	}
	if err != nil {
		return web.GallerySearch{}, err
	}
	var edit *mcpconfig.Edit
	if data, err := os.ReadFile(g.config); err == nil {
		edit, _ = mcpconfig.NewEdit(g.config, data) // a broken file has no entries to tell
	}
	out := web.GallerySearch{Registry: g.client.URL(), Servers: make([]web.GalleryServer, len(recs))}
	for i, r := range recs {
		s := r.Server
		gs := web.GalleryServer{Name: s.Name, Title: s.Title, Description: s.Description, Version: s.Version,
			Status: r.Status, StatusMessage: r.StatusMessage, Runs: s.Runs(), WebsiteURL: s.WebsiteURL, Entry: mcpregistry.EntryName(s.Name)}
		if s.Repository != nil {
			gs.RepositoryURL = s.Repository.URL
		}
		gs.InConfig = edit != nil && edit.Has(gs.Entry)
		out.Servers[i] = gs
	}
	return out, nil
}

// Add implements web.Gallery: what elysia mcp add does, except that a
// required value is never asked for: every one missing is named.
func (g *gallery) Add(ctx context.Context, req web.GalleryAdd) (web.GalleryAdded, error) {
	if g.client == nil {
		return web.GalleryAdded{}, g.err
	}
	name := req.Name
	if name == "" {
		name = mcpregistry.EntryName(req.Server)
	}
	// Before asking the registry anything.
	if err := mcpregistry.CheckAbsent(g.config, name); err != nil {
		return web.GalleryAdded{}, fmt.Errorf("%s already has a server %q; nothing changed (choose another name): %w", g.config, name, web.ErrEntryExists)
	}
	rec, err := g.client.Get(ctx, req.Server, req.Version)
	switch {
	case errors.Is(err, mcpregistry.ErrNotFound):
		return web.GalleryAdded{}, fmt.Errorf("%w (%w)", err, tree.ErrNotFound)
	case errors.Is(err, mcpregistry.ErrUnreachable), errors.Is(err, mcpregistry.ErrBadAnswer):
		return web.GalleryAdded{}, err
	case err != nil: // a name or version that is not one
		return web.GalleryAdded{}, fmt.Errorf("%w: %w", web.ErrBadEntry, err)
	}
	opts := &mcpregistry.EntryOptions{Name: req.Name, PerUserSecrets: req.PerUserSecrets, Values: req.Values}
	missing, err := mcpregistry.MissingValues(&rec.Server, opts)
	if err != nil {
		return web.GalleryAdded{}, fmt.Errorf("%w; nothing written (%w)", err, web.ErrBadEntry)
	}
	if len(missing) > 0 {
		mv := &web.MissingValuesError{Server: rec.Server.Name}
		for _, v := range missing {
			mv.Values = append(mv.Values, web.GalleryValue{Name: v.Name, Kind: v.Kind, Description: v.Description, Choices: v.Choices, Placeholder: v.Placeholder})
		}
		return web.GalleryAdded{}, mv
	}
	entry, err := mcpregistry.NewEntry(&rec.Server, opts)
	if err != nil {
		return web.GalleryAdded{}, fmt.Errorf("%w; nothing written (%w)", err, web.ErrBadEntry)
	}
	switch err := entry.AddTo(g.config); {
	case errors.Is(err, mcpconfig.ErrServerExists):
		return web.GalleryAdded{}, fmt.Errorf("%w; nothing changed (%w)", err, web.ErrEntryExists)
	case errors.Is(err, mcpconfig.ErrFileChanged):
		return web.GalleryAdded{}, fmt.Errorf("%w (%w)", err, tree.ErrBusy)
	case errors.Is(err, mcpconfig.ErrInvalidConfig):
		return web.GalleryAdded{}, fmt.Errorf("%w (%w)", err, web.ErrBadEntry)
	case err != nil:
		return web.GalleryAdded{}, err
	}
	out := web.GalleryAdded{Name: entry.Name, ToolName: mcpconfig.ToolName(entry.Name), ConfigFile: g.config,
		Server: rec.Server.Name, Version: rec.Server.Version, From: entry.From, Transport: entry.Transport,
		Command: entry.Command, Args: entry.Args, URL: entry.URL, UserSecrets: entry.UserSecrets, Skipped: entry.Skipped}
	for _, in := range entry.Inputs {
		out.Inputs = append(out.Inputs, web.GalleryInput{ID: in.ID, Description: in.Description, Env: mcpconfig.InputEnvVar(in.ID)})
	}
	if rec.Status != "" && rec.Status != "active" {
		out.Warning = fmt.Sprintf("%s %s is %s in the registry", rec.Server.Name, rec.Server.Version, rec.Status)
		if rec.StatusMessage != "" {
			out.Warning += ": " + rec.StatusMessage
		}
	}
	return out, nil
}
