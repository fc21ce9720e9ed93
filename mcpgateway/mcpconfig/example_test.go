package mcpconfig_test

import (
	"errors"
	"fmt"

	"github.com/elysia-go/elysia/mcpgateway/mcpconfig"
)

func ExampleParse() {
	data := []byte(`{
  "inputs": [{"type": "promptString", "id": "api_token", "password": true}],
  "servers": {
    "todo": {"command": "./bin/todo-mcp", "env": {"TODO_DB": "./data/todos.db"}},
    "search": {"type": "http", "url": "https://example.com/mcp",
               "headers": {"Authorization": "Bearer ${input:api_token}"}}
  }
}`)
	env := map[string]string{"ELYSIA_INPUT_API_TOKEN": "s3cr3t-token"}
	cfg, err := mcpconfig.Parse("mcp.json", data, &mcpconfig.LoadOptions{
		LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		BaseDir:   "/srv/elysia",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range cfg.Servers {
		d := s.Display()
		fmt.Println(mcpconfig.ToolName(s.Name), s.Transport, s.Command, d.Command, d.URL, d.Env, d.Headers)
	}

	_, err = mcpconfig.Parse("mcp.json", []byte(`{"servers": {"x": {"type": "foo"}}}`), nil)
	fmt.Println(err, errors.Is(err, mcpconfig.ErrInvalidConfig))
	// Output:
	// mcp_todo stdio /srv/elysia/bin/todo-mcp ./bin/todo-mcp  map[TODO_DB:***] map[]
	// mcp_search http   https://example.com/mcp map[] map[Authorization:***]
	// mcp.json:1:28: server "x": unknown type "foo" (want stdio, http or sse) true
}
