# Elysia-Go. `make run` serves the default mcp.json; `make test` runs every
# test, installing what the integration tests need on a fresh machine.

GO        ?= go
ADDR      ?= 127.0.0.1:8000
CONFIG    ?= mcp.json
BENCHCOUNT ?= 10
# An execution count, not a duration: go1.26's fuzz coordinator can fail a
# -fuzztime=<duration> run with a bare "context deadline exceeded" at the
# deadline when a worker is busy (go.dev/issue/75804, fixed in go1.27).
FUZZTIME  ?= 20000x

# The binaries are built once per run; the tests use them through these.
export ELYSIA_TODO_MCP := $(CURDIR)/bin/todo-mcp
export ELYSIA_BIN      := $(CURDIR)/bin/elysia
export ELYSIA_CONFORMANCE_SERVER := $(CURDIR)/bin/conformance-server

# The official MCP Registry the registry tests run (internal/testenv builds
# the same version when this binary is not there).
MCP_REGISTRY_MODULE := github.com/modelcontextprotocol/registry/cmd/registry@v1.7.9

# Fuzz targets run briefly by `make test` (package:Target).
FUZZ := ./mcpgateway/mcpconfig:FuzzParse ./mcpgateway/mcpconfig:FuzzEdit ./mcpgateway/mcpauth:FuzzWWWAuthenticate ./tools:FuzzSchemaValidate ./tools:FuzzQuickSchema ./tree:FuzzParseDecision ./web/stream:FuzzQueryBody ./web:FuzzExecuteResultJSON ./web:FuzzExecuteBody ./internal/jsonscan:FuzzValue ./llm:FuzzOffline ./cmd/elysia:FuzzTerminalText ./mcpendpoint/internal/callstream:FuzzParseEventID ./mcpendpoint:FuzzUntagAnswer ./mcpendpoint:FuzzRefuseUnserved ./tools:FuzzCleanDescription ./mcpgateway/internal/session:FuzzInputRound ./mcpgateway/internal/session:FuzzParseCallResult ./mcpgateway/internal/stdiorpc:FuzzClassify ./internal/jsonscan:FuzzMembers ./mcpgateway/internal/session:FuzzCallParams ./mcpendpoint/internal/sse:FuzzNext ./mcpendpoint/internal/jsonrpc:FuzzDecode ./tools:FuzzAppendEnvelope ./store:FuzzSplitPacked ./tools:FuzzAppendJSONString

.PHONY: all build run test test-short test-deps fuzz bench lint clean

all: build

build:
	$(GO) build -o bin/todo-mcp ./cmd/todo-mcp
	$(GO) build -o bin/elysia ./cmd/elysia
	$(GO) build -o bin/conformance-server ./cmd/conformance-server

run: build
	@echo "Elysia-Go: open http://$(ADDR)/tree/cli/first in a browser"
	./bin/elysia serve --addr $(ADDR) --config $(CONFIG)

test-deps:
	./scripts/test-deps.sh

# Every test, race detector on, against real MCP servers, a real SQLite file,
# a throwaway PostgreSQL cluster and headless Chromium.
test: build test-deps bin/mcp-registry
	@set -e; pgdir=$$(mktemp -d /tmp/elysia-pg.XXXXXX); \
	trap './scripts/postgres-test.sh stop '"$$pgdir"' >/dev/null 2>&1 || true' EXIT; \
	eval "$$(./scripts/postgres-test.sh start $$pgdir)"; \
	ELYSIA_MCP_REGISTRY=$(CURDIR)/bin/mcp-registry $(GO) test -race -timeout 15m ./...
	@$(MAKE) --no-print-directory fuzz

# Built once: the module version is pinned.
bin/mcp-registry:
	@set -e; d=$$(mktemp -d); \
	GOBIN=$$d GOFLAGS=-mod=mod $(GO) install $(MCP_REGISTRY_MODULE); \
	mkdir -p bin; mv $$d/registry $@; rmdir $$d

test-short:
	$(GO) test -short ./...

fuzz:
	@set -e; for f in $(FUZZ); do \
		pkg=$${f%%:*}; target=$${f##*:}; \
		echo "fuzz $$pkg $$target ($(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) $$pkg; \
	done

# Benchmarks compare like with like in one run; summarised with benchstat.
# -p 1: one package's benchmarks at a time, or they share the 2 cores.
bench: build test-deps
	@mkdir -p bench
	GIN_MODE=release $(GO) test -p 1 -run '^$$' -bench . -skip '^BenchmarkConcurrentQueries$$' -benchmem -count $(BENCHCOUNT) -timeout 60m \
		./mcpgateway/ ./tree/ ./web/ ./discovery/ ./cmd/elysia/ | tee bench/latest.txt
	$(GO) run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da bench/latest.txt
	GIN_MODE=release $(GO) test -run '^$$' -bench '^BenchmarkConcurrentQueries$$' -benchtime 1x -count 1 -timeout 15m \
		./cmd/elysia/ | tee bench/load.txt
	@set -e; pgdir=$$(mktemp -d /tmp/elysia-pg.XXXXXX); \
	trap './scripts/postgres-test.sh stop '"$$pgdir"' >/dev/null 2>&1 || true' EXIT; \
	eval "$$(./scripts/postgres-test.sh start $$pgdir)"; \
	GIN_MODE=release $(GO) test -run '^$$' -bench '^BenchmarkMCPRollingRestart$$' -benchtime 1x -count 3 -timeout 15m \
		./cmd/elysia/ | tee bench/rolling.txt

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
	$(GO) run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0 run ./...

clean:
	rm -rf bin bench
