package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
)

// DefaultMaxBodyBytes is the largest request body accepted when
// Options.MaxBodyBytes is zero.
const DefaultMaxBodyBytes = 1 << 20

// errTooLarge answers a body over the limit.
var errTooLarge = &requestError{http.StatusRequestEntityTooLarge, "request body too large (limit 1 MiB)"}

// DefaultBodyReadTimeout bounds the arrival of a request body when
// Options.BodyReadTimeout is zero.
const DefaultBodyReadTimeout = 30 * time.Second

// bodyDeadline is the middleware that bounds the arrival of a request's
// body by s.bodyWait: the connection's read deadline is set before the
// route reads it and cleared once the body has arrived whole, so that the
// server's watch for a client that goes away (and the long streams that
// follow a request) are not cut by it. The next request on the connection
// gets the server's own deadlines again.
func (s *Server) bodyDeadline(c *gin.Context) {
	r := c.Request
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		c.Next()
		return
	}
	rc := http.NewResponseController(c.Writer)
	if rc.SetReadDeadline(time.Now().Add(s.bodyWait)) != nil {
		c.Next() // a connection that takes no deadline (HTTP/2 through some proxies): its server's timeouts apply
		return
	}
	r.Body = &deadlineBody{ReadCloser: r.Body, wait: s.bodyWait, rc: rc}
	c.Next()
}

// deadlineBody is a request body read under a deadline, which is cleared
// (once) when the body ends.
type deadlineBody struct {
	io.ReadCloser
	wait    time.Duration
	rc      *http.ResponseController
	arrived sync.Once
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	switch {
	case err == io.EOF:
		b.arrived.Do(func() { _ = b.rc.SetReadDeadline(time.Time{}) })
	case errors.Is(err, os.ErrDeadlineExceeded):
		err = &requestError{http.StatusRequestTimeout, fmt.Sprintf("request body not received within %s: send the whole body at once", b.wait)}
	}
	return n, err
}

// readBody reads the whole request body, at most limit bytes.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength > limit {
		return nil, tooLarge(limit)
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, tooLarge(limit)
		}
		if re, ok := errors.AsType[*requestError](err); ok {
			return nil, re // the body's deadline
		}
		return nil, badRequest("read request body: " + err.Error())
	}
	return b, nil
}

func tooLarge(limit int64) error {
	if limit == DefaultMaxBodyBytes {
		return errTooLarge
	}
	return &requestError{http.StatusRequestEntityTooLarge, "request body too large (limit " + sizeText(limit) + ")"}
}

// sizeText writes a size limit for people: "1 MiB" for the default,
// bytes otherwise.
func sizeText(limit int64) string {
	if limit == DefaultMaxBodyBytes {
		return "1 MiB"
	}
	return fmt.Sprintf("%d bytes", limit)
}

// decodeJSON decodes body, a JSON object, into dst, and checks that each
// of required is present and, for strings, not empty. optional says whether
// an empty body is allowed (and leaves dst as it is). Errors are 400s
// saying what was wrong and where.
//
// A body is parsed once, into dst, and the required fields are checked
// on the struct it filled. Whatever that cannot settle (an error, a
// required field left zero, which may be absent, null or "", a dst that is
// not a struct) is decided by decodeJSONChecked, which answers every body
// as before, in the same words. (Like the decoding itself, the check on
// the struct matches a key in any case: {"Tool_Name": "x"} fills
// tool_name.)
func decodeJSON(body []byte, dst any, optional bool, required ...string) error {
	if f, ok := dst.(fastBody); ok && f.decodeFast(body) {
		return nil
	}
	if once(body, dst, required) {
		return nil
	}
	return decodeJSONChecked(body, dst, optional, required...)
}

// fastBody is a body that decodes its usual form itself (decodeFast),
// without encoding/json's reflection: false leaves body to decodeJSON's
// general way, which answers it as before.
type fastBody interface {
	decodeFast(body []byte) bool
}

// once decodes body into dst in one pass and reports whether that settled
// it: body is one JSON object that decodes without error, and each of
// required is a field of dst's struct that holds a value no absent, null
// or empty member leaves.
func once(body []byte, dst any, required []string) bool {
	rest := bytes.TrimLeft(body, " \t\r\n")
	if len(rest) == 0 || rest[0] != '{' {
		return false
	}
	v := reflect.ValueOf(dst)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return false
	}
	d := json.NewDecoder(bytes.NewReader(rest))
	d.UseNumber()
	if d.Decode(dst) != nil || len(bytes.TrimLeft(rest[d.InputOffset():], " \t\r\n")) > 0 {
		return false
	}
	fields := jsonFields(v.Elem().Type())
	for _, name := range required {
		i, ok := fields[name]
		if !ok || !filled(v.Elem().Field(i)) {
			return false
		}
	}
	return true
}

// filled reports whether v, a field json has decoded into, holds a value
// only a member that is present, not null and not "" gives it.
func filled(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		return !v.IsNil() && filled(v.Elem())
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 { // json.RawMessage, base64
			b := v.Bytes()
			return len(b) > 0 && string(b) != "null" && string(b) != `""`
		}
	}
	return !v.IsZero()
}

// jsonFieldsOf caches jsonFields by type.
var jsonFieldsOf sync.Map // reflect.Type → map[string]int

// jsonFields maps the JSON names of t's own exported fields (a tag's name,
// else the field's) to their indexes. Embedded fields are left out: a
// required name among them is checked by decodeJSONChecked.
func jsonFields(t reflect.Type) map[string]int {
	if m, ok := jsonFieldsOf.Load(t); ok {
		return m.(map[string]int)
	}
	m := make(map[string]int, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() || f.Anonymous {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" && f.Tag.Get("json") == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		m[name] = i
	}
	jsonFieldsOf.Store(t, m)
	return m
}

// decodeJSONChecked is decodeJSON in two passes: body parsed into a map to
// check required, then decoded into dst.
func decodeJSONChecked(body []byte, dst any, optional bool, required ...string) error {
	if len(bytes.TrimSpace(body)) == 0 {
		if optional && len(required) == 0 {
			return nil
		}
		return badRequest("missing JSON body")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return badRequest(describeJSONError(err))
	}
	if fields == nil {
		return badRequest("invalid JSON body: want an object, found null")
	}
	for _, name := range required {
		raw, ok := fields[name]
		if !ok || string(raw) == "null" {
			return badRequest(fmt.Sprintf("missing field %q", name))
		}
		if string(raw) == `""` {
			return badRequest(fmt.Sprintf("field %q must not be empty", name))
		}
	}
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	if err := d.Decode(dst); err != nil {
		return badRequest(describeJSONError(err))
	}
	return nil
}

// describeJSONError turns an encoding/json error into a message for the
// client.
func describeJSONError(err error) string {
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		msg := strings.TrimSuffix(se.Error(), " JSON input")
		if strings.HasPrefix(se.Error(), "unexpected end of JSON input") {
			msg = "unexpected end of input"
		}
		return fmt.Sprintf("invalid JSON body: %s at offset %d", msg, se.Offset)
	}
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		if te.Field == "" {
			return fmt.Sprintf("invalid JSON body: want an object, found %s", te.Value)
		}
		return fmt.Sprintf("invalid JSON body: field %q must be %s, found %s", te.Field, jsonKind(te.Type.Kind().String()), te.Value)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "invalid JSON body: unexpected end of input"
	}
	return "invalid JSON body: " + err.Error()
}

// jsonKind names a Go kind as its JSON type.
func jsonKind(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "map", "struct":
		return "an object"
	case "int", "int64", "float64", "uint", "int32", "float32":
		return "a number"
	}
	return "of another type"
}
