// Package ui holds the embedded web UI: the page served for
// GET /tree/:user_id/:conversation_id to browsers, and the static assets it
// loads from /ui/ (plain ES modules and one stylesheet, no build step and
// nothing fetched from outside the service).
//
// It imports nothing from the project; web serves Index for the page and
// Handler (or FS) under Prefix.
package ui
