package mcpregistry

// Server is one version of an MCP server as its server.json describes it
// (the ServerDetail schema of the registry's OpenAPI document). Only the
// fields an mcp.json entry needs are kept.
type Server struct {
	// Name is reverse-DNS with one slash: "io.github.user/weather".
	Name        string      `json:"name"`
	Title       string      `json:"title,omitempty"`
	Description string      `json:"description"`
	Version     string      `json:"version"`
	WebsiteURL  string      `json:"websiteUrl,omitempty"`
	Repository  *Repository `json:"repository,omitempty"`
	Packages    []Package   `json:"packages,omitempty"`
	Remotes     []Transport `json:"remotes,omitempty"`
}

// Repository is where the server's source lives.
type Repository struct {
	URL    string `json:"url"`
	Source string `json:"source"`
}

// Package is a way to run the server locally.
type Package struct {
	// RegistryType is "npm", "pypi", "oci", "nuget", "mcpb", ...
	RegistryType    string `json:"registryType"`
	RegistryBaseURL string `json:"registryBaseUrl,omitempty"`
	Identifier      string `json:"identifier"`
	Version         string `json:"version,omitempty"`
	// RuntimeHint ("npx", "uvx", "docker") is not used: the command is
	// chosen by RegistryType, never taken from the registry.
	RuntimeHint          string          `json:"runtimeHint,omitempty"`
	Transport            Transport       `json:"transport"`
	RuntimeArguments     []Argument      `json:"runtimeArguments,omitempty"`
	PackageArguments     []Argument      `json:"packageArguments,omitempty"`
	EnvironmentVariables []KeyValueInput `json:"environmentVariables,omitempty"`
}

// Transport is how a client talks to the server: "stdio" for a package,
// "streamable-http" or "sse" (with a URL template, headers and, for a
// remote, the variables of the template).
type Transport struct {
	Type      string           `json:"type"`
	URL       string           `json:"url,omitempty"`
	Headers   []KeyValueInput  `json:"headers,omitempty"`
	Variables map[string]Input `json:"variables,omitempty"`
}

// Input is a value the server takes: fixed (Value, with {variables}),
// defaulted, or to be supplied by the user.
type Input struct {
	Description string           `json:"description,omitempty"`
	IsRequired  bool             `json:"isRequired,omitempty"`
	Format      string           `json:"format,omitempty"`
	Value       string           `json:"value,omitempty"`
	IsSecret    bool             `json:"isSecret,omitempty"`
	Default     string           `json:"default,omitempty"`
	Placeholder string           `json:"placeholder,omitempty"`
	Choices     []string         `json:"choices,omitempty"`
	Variables   map[string]Input `json:"variables,omitempty"`
}

// Argument is a command-line argument: "positional" (its value) or
// "named" (Name, then its value).
type Argument struct {
	Input
	Type       string `json:"type"`
	Name       string `json:"name,omitempty"`
	ValueHint  string `json:"valueHint,omitempty"`
	IsRepeated bool   `json:"isRepeated,omitempty"`
}

// KeyValueInput is an environment variable or a header.
type KeyValueInput struct {
	Input
	Name string `json:"name"`
}

// Record is one version of a server as the registry lists it: its
// server.json and the registry's own metadata about it.
type Record struct {
	Server Server
	// Status is "active", "deprecated" or "deleted" ("" when the
	// registry does not say); StatusMessage may say why.
	Status        string
	StatusMessage string
	// IsLatest is set on the registry's latest version of the server.
	IsLatest bool
	// PublishedAt is when the version was published, as the registry
	// wrote it (RFC 3339), or "".
	PublishedAt string
}
