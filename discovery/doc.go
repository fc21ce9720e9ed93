// Package discovery turns the servers of mcp.json into gateways and keeps
// every decision tree in step with the file: at start-up it builds one
// mcpgateway.Gateway per server and hands them to the tree layer as
// placements; afterwards it watches the file (fsnotify, on its folder, so
// editors that rename on save work), debounces changes, and applies the
// difference — added servers appear, removed ones leave and their processes
// end, changed ones are replaced after their in-flight calls finish. An
// invalid file keeps the last good config in force and its error is kept for
// /api/servers and logged.
//
// It imports mcpgateway, tree and tools of the project, and fsnotify.
package discovery
