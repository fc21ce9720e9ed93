module github.com/elysia-go/elysia

go 1.26.8

require (
	github.com/mark3labs/mcp-go v1.2.1 // indirect
	github.com/santhosh-tekuri/jsonschema/v5 v5.3.1 // indirect
)
