// Package tools owns the vocabulary shared by everything that runs inside a
// decision tree: the [Tool] interface, the [Input]s a tool declares, the
// [Result] a run produces, the [Event]s a tool emits while it runs, argument
// validation against JSON Schema, and the built-in tools text_response and
// cited_summarize.
//
// It is the leaf of the module: it imports no other package of the project.
// Its only third-party dependency is github.com/santhosh-tekuri/jsonschema/v5.
package tools
