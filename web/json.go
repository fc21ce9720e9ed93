package web

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/elysia-go/elysia/tools"
)

// object is a response body with its keys in order ("error" first, as in
// DESIGN.md's examples); field is one of its members.
type (
	object = tools.Object
	field  = tools.Member
)

// kv is one member of a response body.
func kv(key string, value any) field { return field{Key: key, Value: value} }

// ok is the body of a successful JSON answer: "error": "" and then fields.
func ok(fields ...field) object {
	return append(object{kv("error", "")}, fields...)
}

// writeJSON answers with status and body, without HTML escaping ("<= 5"
// stays "<= 5"). A body that cannot be marshalled is a bug of this
// service: 500 with a generic message.
func writeJSON(c *gin.Context, status int, body object) {
	b, err := tools.Marshal(body)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":"internal error: response not encodable"}`)
	}
	c.Data(status, "application/json; charset=utf-8", b)
}
