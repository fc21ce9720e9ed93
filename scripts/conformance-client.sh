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
// "pin": "off": pinning is not under test, and a mock server may list
// other tools to each session; held back, they could not be called.
const server = {type: "http", url, call_timeout: 20, pin: "off"};
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
case "auth/wif-jwt-bearer":
	// Workload identity federation: the JWT of the workload, as a platform
	// would leave it in a file, is the jwt-bearer grant.
	require("fs").writeFileSync("workload.jwt", ctx.valid_jwt + "\n", {mode: 0o600});
	server.oauth = {grant: "jwt_bearer", client_id: ctx.client_id, assertion_file: "workload.jwt"};
	break;
case "auth/enterprise-managed-authorization":
	// The ID token from the enterprise IdP is exchanged there for an
	// ID-JAG (the token endpoint found from the metadata of the IdP
	// issuer), which is the jwt-bearer grant at the authorization server
	// of the MCP server.
	server.oauth = {grant: "id_jag", client_id: ctx.client_id, client_secret: ctx.client_secret,
		id_token: ctx.idp_id_token, idp_issuer: ctx.idp_issuer, idp_client_id: ctx.idp_client_id};
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

# context_calls makes each tools/call the scenario's context lists
# (toolCalls: [{name, arguments}]), in order.
context_calls() {
	local calls
	calls=$(node -e '
for (const c of JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT || "{}").toolCalls || [])
	console.log(c.name + "\t" + JSON.stringify(c.arguments || {}));
')
	local status=0
	while IFS=$'\t' read -r name args; do
		[ -z "$name" ] || call "$name" "$args" || status=1
	done <<<"$calls"
	return $status
}

# served runs the JavaScript body $1 against `elysia mcp serve` on the same
# mcp.json: the aggregate endpoint on stdio, whose client to the scenario's
# server is the gateway, for what the CLI cannot ask (prompts/get,
# resources/read, a tool's schema handed back). The body gets rpc(method,
# params), which returns the result or throws the error; the tools are
# exposed unprefixed.
served() {
	node -e '
const fs = require("fs");
const cfg = JSON.parse(fs.readFileSync("mcp.json"));
cfg.expose = {mode: "tools", agent: false};
cfg.servers.conformance.prefix = "";
fs.writeFileSync("mcp.json", JSON.stringify(cfg, null, 2), {mode: 0o600});
const child = require("child_process").spawn(process.argv[1], ["mcp", "serve", "--config", "mcp.json"],
	{stdio: ["pipe", "pipe", "inherit"]});
let next = 1, buf = "";
const waiting = new Map();
child.stdout.on("data", (d) => {
	buf += d;
	let i;
	while ((i = buf.indexOf("\n")) >= 0) {
		const line = buf.slice(0, i);
		buf = buf.slice(i + 1);
		if (!line.trim()) continue;
		const m = JSON.parse(line);
		if (m.id !== undefined && waiting.has(m.id)) {
			const [ok, fail] = waiting.get(m.id);
			waiting.delete(m.id);
			m.error ? fail(new Error(m.error.message)) : ok(m.result);
		}
	}
});
const send = (m) => child.stdin.write(JSON.stringify(m) + "\n");
const rpc = (method, params = {}) => new Promise((ok, fail) => {
	const id = next++;
	waiting.set(id, [ok, fail]);
	send({jsonrpc: "2.0", id, method, params});
});
const body = new Function("rpc", "return (async () => {" + process.argv[2] + "})()");
(async () => {
	await rpc("initialize", {protocolVersion: "2025-11-25", capabilities: {},
		clientInfo: {name: "conformance-client.sh", version: "1"}});
	send({jsonrpc: "2.0", method: "notifications/initialized"});
	await body(rpc);
})().then(() => { child.stdin.end(); process.exitCode = 0; },
	(e) => { console.error("conformance-client.sh:", e.message); child.kill(); process.exitCode = 1; });
' "$elysia" "$1" </dev/null
}

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
request-metadata | json-schema-ref-no-deref)
	# The request's _meta and headers, and a schema with a network $ref,
	# are the list's to show: nothing to call.
	list
	;;
json-schema-2020-12-preservation)
	# The focal tool's schema, as listed, goes back to the echo tool.
	served '
// The endpoint lists a server once it has connected: ask again for up to 10 s.
let focal;
for (let i = 0; i < 50 && !focal; i++) {
	if (i > 0) await new Promise((r) => setTimeout(r, 200));
	const {tools} = await rpc("tools/list");
	focal = tools.find((t) => t.name === "json_schema_2020_12_tool");
}
if (!focal) throw new Error("json_schema_2020_12_tool is not listed");
await rpc("tools/call", {name: "json_schema_echo", arguments: {schema: focal.inputSchema}});
'
	;;
http-standard-headers)
	# Mcp-Method on every POST, Mcp-Name on tools/call, resources/read and
	# prompts/get.
	served '
await rpc("tools/list");
await rpc("tools/call", {name: "test_headers", arguments: {}});
await rpc("resources/list");
await rpc("resources/read", {uri: "file:///path/to/file%20name.txt"});
await rpc("prompts/list");
await rpc("prompts/get", {name: "test_prompt"});
'
	;;
http-custom-headers)
	list
	context_calls
	;;
http-invalid-tool-headers)
	# The tools whose x-mcp-header annotations are invalid are left out;
	# the valid one is still called.
	list
	call valid_tool '{"region": "us-west1"}'
	;;
sep-2322-client-request-state)
	# Each call answers the server's input_required results and sends the
	# request again with its requestState (or none, when it sent none);
	# the unrelated call carries neither.
	list
	call test_mrtr_echo_state '{}'
	call test_mrtr_unrelated '{}'
	call test_mrtr_no_state '{}'
	call test_mrtr_no_result_type '{}'
	;;
sep-2640-*)
	# Skills (SEP-2640, an extension) are not read by the client: listing
	# the server is all it does.
	list
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
