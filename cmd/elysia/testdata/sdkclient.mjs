// sdkclient.mjs drives the official MCP TypeScript SDK client against the
// aggregate endpoint, for the Go tests: node sdkclient.mjs http URL [KEY]
// or node sdkclient.mjs stdio COMMAND ARGS... It lists the tools, creates a
// todo and lists them (with a progress token), and prints one JSON line.
// node sdkclient.mjs long URL calls server-everything's long-running
// operation (1.5 s, 5 steps) instead and prints its progress and answer.
import { pathToFileURL } from "node:url";
import path from "node:path";

const sdk = process.env.SDK_DIR;
const load = (p) => import(pathToFileURL(path.join(sdk, "dist/esm", p)).href);
const { Client } = await load("client/index.js");

const [mode, ...rest] = process.argv.slice(2);
let transport;
if (mode === "http" || mode === "long") {
  const { StreamableHTTPClientTransport } = await load("client/streamableHttp.js");
  const headers = rest[1] ? { Authorization: `Bearer ${rest[1]}` } : {};
  transport = new StreamableHTTPClientTransport(new URL(rest[0]), { requestInit: { headers } });
} else {
  const { StdioClientTransport } = await load("client/stdio.js");
  transport = new StdioClientTransport({ command: rest[0], args: rest.slice(1), env: process.env, stderr: "inherit" });
}
const client = new Client({ name: "sdk-test", version: "1.0.0" });
await client.connect(transport);
const out = { protocol: transport.protocolVersion ?? null, server: client.getServerVersion() };
if (mode === "long") {
  const progress = [];
  const res = await client.callTool({ name: "everything__trigger-long-running-operation", arguments: { duration: 1.5, steps: 5 } },
    undefined, { onprogress: (p) => progress.push(p.progress) });
  out.progress = progress;
  out.text = res.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");
  await client.close();
  console.log(JSON.stringify(out));
  process.exit(0);
}
const tools = await client.listTools();
out.tools = tools.tools.map((t) => t.name);
const created = await client.callTool({ name: "todo__create_todo", arguments: { title: "from the sdk" } });
out.createError = created.isError ?? false;
const listed = await client.callTool({ name: "todo__list_todos", arguments: {} }, undefined, { onprogress: () => {} });
out.listText = listed.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");
const bad = await client.callTool({ name: "todo__create_todo", arguments: { title: 7 } });
out.badIsError = bad.isError ?? false;
await client.close();
console.log(JSON.stringify(out));
