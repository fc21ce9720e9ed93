#!/usr/bin/env bash
# The client driver for the official MCP conformance suite
# (@modelcontextprotocol/conformance, pinned in testdata/npm): the suite's
# runner starts a mock server per client scenario and runs
#
#   conformance-client.sh SERVER_URL
#
# with MCP_CONFORMANCE_SCENARIO set (and MCP_CONFORMANCE_CONTEXT, JSON with
# credentials, for some auth scenarios). The driver writes an mcp.json naming
# SERVER_URL as an "http" server and drives it with the product's own client:
# the built elysia CLI ($ELYSIA_BIN, else bin/elysia), i.e. `elysia mcp list`
# and `elysia mcp call` through the mcpgateway package, as a user would.
#
# cmd/elysia/conformance_test.go runs every client scenario through this
# script; docs/CONFORMANCE.md has the command and the table of results.
set -euo pipefail

url=${1:?usage: MCP_CONFORMANCE_SCENARIO=NAME conformance-client.sh SERVER_URL}
scenario=${MCP_CONFORMANCE_SCENARIO:?MCP_CONFORMANCE_SCENARIO is not set}
root=$(cd "$(dirname "$0")/.." && pwd)
elysia=${ELYSIA_BIN:-$root/bin/elysia}

# A throwaway folder: the config holds credentials from the context, and
# anything the CLI keeps beside its working directory goes away with it.
dir=$(mktemp -d "${TMPDIR:-/tmp}/elysia-conformance.XXXXXX")
trap 'rm -rf "$dir"' EXIT
cd "$dir"

# The config is written by node (already required by the suite) so that URL
# and credentials are JSON-encoded correctly, PEM keys included. The "oauth"
# block is mcp.json's (DESIGN.md, "Sign-in and per-user credentials"): the
# JWT's algorithm follows from the key, so the context's signing_algorithm
# needs no field of its own. call_timeout (seconds) ends a call
# whose server waits for an answer the client never gives before the
# runner's own 30 s limit, which kills this script but not the CLI under it.
node -e '
const [url, scenario] = process.argv.slice(1);
const ctx = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT || "{}");
const server = {type: "http", url, call_timeout: 20};
switch (scenario) {
case "auth/pre-registration":
	server.oauth = {client_id: ctx.client_id, client_secret: ctx.client_secret};
	break;
case "auth/client-credentials-basic":
	server.oauth = {grant: "client_credentials", client_id: ctx.client_id, client_secret: ctx.client_secret};
	break;
case "auth/client-credentials-jwt":
	server.oauth = {grant: "client_credentials", client_id: ctx.client_id,
		client_auth: "private_key_jwt", private_key: ctx.private_key_pem};
	break;
case "auth/basic-cimd":
	// The Client ID Metadata Document URL the suite expects; the client
	// uses it because the authorization server advertises support.
	server.oauth = {client_id: "https://conformance-test.local/client-metadata.json"};
	break;
}
require("fs").writeFileSync("mcp.json", JSON.stringify({servers: {conformance: server}}, null, 2), {mode: 0o600});
' "$url" "$scenario"

# Sign-in fetches the authorization URL itself: the suite's authorization
# servers approve at once. The tokens go to a file in the throwaway folder,
# so that `mcp call` uses the sign-in of `mcp list` (the step-up scenario
# needs that: its second authorization must be the escalation).
export ELYSIA_OAUTH_BROWSER=fetch ELYSIA_TOKEN_FILE=$dir/tokens.json

# Nothing reads the terminal: a server's question is answered with its
# form's defaults (SEP-1034), as a user pressing Enter on every field would.
export ELYSIA_ELICITATION=accept-defaults

list() { "$elysia" mcp list --config mcp.json conformance </dev/null; }
call() { "$elysia" mcp call --config mcp.json conformance "$1" "$2" </dev/null; }

case $scenario in
initialize)
	list
	;;
tools_call)
	list
	call add_numbers '{"a": 5, "b": 3}'
	;;
elicitation-sep1034-client-defaults)
	list
	call test_client_elicitation_defaults '{}'
	;;
sse-retry)
	list
	call test_reconnection '{}'
	;;
auth/client-credentials-jwt | auth/client-credentials-basic | auth/pre-registration)
	list
	;;
auth/*)
	# Includes auth/resource-mismatch, where the right outcome is a
	# refusal: the suite accepts the non-zero exit and checks that no token
	# was requested for the wrong resource.
	list
	call test-tool '{}'
	;;
*)
	echo "conformance-client.sh: no mapping for scenario $scenario" >&2
	exit 2
	;;
esac
