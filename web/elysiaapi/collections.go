package elysiaapi

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/coder/websocket"
	"github.com/gin-gonic/gin"

	"github.com/elysia-go/elysia/web"
)

// noCollections is the error of the routes about one collection.
const noCollections = "this service has no collections: its data comes from MCP servers, through their tools"

// mappingTypes serves GET /collections/mapping_types: the display types a
// collection's fields can be mapped to, none here.
func (s *routes) mappingTypes(c *gin.Context) {
	s.writeJSON(c, http.StatusOK, ok(kv("mapping_types", web.EmptyList)))
}

// collectionsList serves GET /collections/:user_id/list: no collections,
// an empty list (the Data page then says there are no sources).
func (s *routes) collectionsList(c *gin.Context) {
	s.writeJSON(c, http.StatusOK, ok(kv("collections", web.EmptyList)))
}

// collectionsDeleteAll serves DELETE
// /collections/:user_id/metadata/delete/all: there is nothing to delete.
func (s *routes) collectionsDeleteAll(c *gin.Context) {
	s.writeJSON(c, http.StatusOK, ok())
}

// noCollection answers a route about one collection: there are none, which
// is said in "error" with 200, not 404, so the frontend does not treat the
// route as missing.
func (s *routes) noCollection(extra ...field) gin.HandlerFunc {
	return func(c *gin.Context) {
		if c.Request.ContentLength != 0 {
			if _, err := s.k.ReadBody(c); err != nil {
				s.fail(c, err, extra)
				return
			}
		}
		s.writeJSON(c, http.StatusOK, append(object{kv("error", "collection "+quote(c.Param("collection_name"))+": "+noCollections)}, extra...))
	}
}

// processCollectionWS serves WebSocket /ws/process_collection: Elysia's
// frontend asks it to analyse a Weaviate collection. There are none here,
// so each message gets an error message in the socket's shape ({"type":
// "error", "collection_name", "progress", "message", "error"}), which ends
// the frontend's wait for that collection, and the socket stays open so
// the frontend does not reconnect in a loop.
func (s *routes) processCollectionWS(c *gin.Context) {
	conn, accepted := s.k.AcceptWS(c)
	if !accepted {
		return
	}
	defer func() { _ = conn.CloseNow() }()
	conn.SetReadLimit(s.k.MaxBody())
	ctx := c.Request.Context()
	defer s.k.TrackSocket(conn)()
	for {
		_, data, err := conn.Read(ctx)
		if err != nil {
			return // the client closed, or the message was over the limit
		}
		var m struct {
			UserID         string `json:"user_id"`
			CollectionName string `json:"collection_name"`
		}
		msg := "collections are not processed here: " + noCollections
		if err := json.Unmarshal(data, &m); err != nil {
			msg = "invalid JSON message: " + err.Error()
		} else if !s.k.MayActFor(c, m.UserID) {
			msg = s.k.Forbidden(m.UserID).Error()
		}
		reply := mustJSON(object{kv("type", "error"), kv("user_id", m.UserID), kv("collection_name", m.CollectionName),
			kv("progress", 0), kv("message", msg), kv("error", msg)})
		wctx, cancel := context.WithTimeout(ctx, s.k.WriteTimeout())
		err = conn.Write(wctx, websocket.MessageText, reply)
		cancel()
		if err != nil {
			return
		}
	}
}
