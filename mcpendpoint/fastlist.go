package mcpendpoint

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strconv"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/elysia-go/elysia/mcpendpoint/internal/catalog"
	"github.com/elysia-go/elysia/mcpendpoint/internal/jsonrpc"
	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

// A tools/list in tools mode is answered from each catalog's pages,
// encoded once (catalog.Catalog.Page) with the tools as the servers sent
// them. The other requests, and the lists of the other modes, go through
// mcp-go.

// anyVersion is fastList's want of a stdio request: 2026-07-28 or earlier.
const anyVersion = "*"

// maxListRequestBytes is the longest stdio line the fast path reads: a
// tools/list request is a few hundred bytes; a longer line goes to mcp-go
// unread.
const maxListRequestBytes = 4 << 10

// listParams are the params of a tools/list as the fast path reads them.
type listParams struct {
	Cursor string          `json:"cursor"`
	Meta   json.RawMessage `json:"_meta"`
}

// parseList returns m's request id and cursor when m is a plain tools/list
// request (a string or number id, and no _meta but a 2026-07-28
// request's), and the 2026-07-28 version it names, or "" for an earlier
// one's.
func parseList(m *jsonrpc.Message) (id json.RawMessage, cursor, version string, ok bool) {
	if m == nil || m.Method != string(mcp.MethodToolsList) || !m.StringOrNumberID() {
		return nil, "", "", false
	}
	var p listParams
	if m.DecodeParams(&p) != nil {
		return nil, "", "", false
	}
	if len(p.Meta) > 0 {
		meta := m.Meta()
		var caps map[string]json.RawMessage
		if !mcp.IsModernProtocol(meta.ProtocolVersion) || !slices.Contains(servedVersions, meta.ProtocolVersion) ||
			json.Unmarshal(meta.ClientCapabilities, &caps) != nil || caps == nil {
			return nil, "", "", false // mcp-go says what is wrong with it
		}
		version = meta.ProtocolVersion
	}
	return m.ID, p.Cursor, version, true
}

// fastList answers the tools/list request msg for user: it returns the
// parts of its JSON-RPC response, to be written one after the other, or
// reports false when mcp-go must answer it (not a plain tools/list, or a
// list not in tools mode). want is the version the request must name in
// its _meta: over HTTP, a 2026-07-28 request's MCP-Protocol-Version, or
// "" for a session's (no _meta); anyVersion over stdio. A 2026-07-28
// request gets the 2026-07-28 result (resultType, caching hints,
// serverInfo).
func (e *Endpoint) fastList(ctx context.Context, user string, msg *jsonrpc.Message, want string) ([][]byte, bool) {
	id, cursor, version, ok := parseList(msg)
	if !ok || (want != anyVersion && want != version) {
		return nil, false
	}
	ex := e.expose()
	if ex.Mode == mcpconfig.ExposeGateways {
		return nil, false
	}
	cat := e.catalogFor(ctx, user, false)
	if catalog.Mode(ex, cat) != mcpconfig.ExposeTools {
		return nil, false
	}
	result := cat.Page(cursor, ex.Agent && e.opts.Agent != nil)
	if version == "" {
		return [][]byte{[]byte(`{"jsonrpc":"2.0","id":`), id, []byte(`,"result":`), result, []byte("}\n")}, true
	}
	hints := fmt.Sprintf(`,"resultType":"complete","ttlMs":%d,"cacheScope":%q,"_meta":{%q:`,
		e.listTTL(cat).Milliseconds(), mcp.CacheScopePrivate, mcp.MetaKeyServerInfo)
	return [][]byte{[]byte(`{"jsonrpc":"2.0","id":`), id, []byte(`,"result":`), result[:len(result)-1],
		[]byte(hints), e.info, []byte("}}}\n")}, true
}

// serveFastList answers a Streamable HTTP POST of a tools/list itself and
// reports true, or leaves it for mcp-go and reports false. Of the earlier
// versions, it answers only a session of the user that has its GET stream
// open: the stream keeps the session alive and carries its notifications,
// which a POST through mcp-go would otherwise deliver. A 2026-07-28
// request must carry the routing headers its body says (mcp-go refuses it
// otherwise).
func (e *Endpoint) serveFastList(w http.ResponseWriter, q *request) bool {
	r := q.R
	version := r.Header.Get(mcpserver.HeaderKeyProtocolVersion)
	modern := mcp.IsModernProtocol(version)
	if !q.Post(string(mcp.MethodToolsList)) || (q.SID == "" && !modern) {
		return false
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return false
	}
	switch {
	case modern:
		if r.Header.Get(mcp.HeaderLastEventID) != "" {
			return false
		}
	case version != "" && !slices.Contains(protocolVersions, version):
		return false
	case !e.sessions.Streaming(q.SID, q.User):
		return false
	default:
		version = "" // checked: the body says nothing of it
	}
	parts, ok := e.fastList(r.Context(), q.User, q.Msg, version)
	if !ok {
		return false
	}
	size := 0
	for _, p := range parts {
		size += len(p)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(size)) // not chunked: the parts are all there
	w.WriteHeader(http.StatusOK)
	for _, p := range parts {
		if _, err := w.Write(p); err != nil {
			break // a gone client misses it
		}
	}
	return true
}
