// Drives the Loom MCP server with the reference TypeScript client
// (@modelcontextprotocol/sdk): initialize, list tools, fs_write, fs_read,
// fs_edit with the anchors from the read, bash inside the jail and a write
// outside the workspace that must fail, a bad-argument call answered in
// band, progress from a long command, and cancellation of a long bash.
//
//   node client.mjs SERVER_BINARY WORKSPACE OUTSIDE_DIR
//
// Exits 0 and prints "tsclient: ok" when every check passes; otherwise
// prints the failed check to stderr and exits 1.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";

const [bin, ws, outside] = process.argv.slice(2);
if (!bin || !ws || !outside) {
  console.error("usage: node client.mjs SERVER_BINARY WORKSPACE OUTSIDE_DIR");
  process.exit(2);
}

function check(cond, what, detail) {
  if (!cond) {
    console.error(`tsclient: FAILED: ${what}` + (detail === undefined ? "" : `\n${typeof detail === "string" ? detail : JSON.stringify(detail, null, 2)}`));
    process.exit(1);
  }
  console.error(`tsclient: ok: ${what}`);
}

const text = (r) => (r.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("");
const sleep = (ms) => new Promise((res) => setTimeout(res, ms));

const client = new Client({ name: "loom-ts-check", version: "1.0.0" });
const transport = new StdioClientTransport({ command: bin, args: ["-workspace", ws, "-warm=false"], stderr: "inherit" });
client.onerror = (e) => console.error("tsclient: client error:", e);
await client.connect(transport);
check(client.getServerVersion()?.name === "loom", "initialize reports the loom server", client.getServerVersion());
check(client.getServerCapabilities()?.tools !== undefined, "the server offers tools");

const { tools } = await client.listTools();
const names = tools.map((t) => t.name);
for (const n of ["fs_read", "fs_write", "fs_edit", "working_directory", "bash", "grep"]) {
  check(names.includes(n), `tools/list lists ${n}`, names);
}
for (const t of tools) {
  check(t.inputSchema?.type === "object", `${t.name} has an object input schema`, t.inputSchema);
}

// fs_write, fs_read, fs_edit with the anchors from the read.
let r = await client.callTool({ name: "fs_write", arguments: { path: "ts/hello.txt", content: "one\ntwo\nthree\n" } });
check(!r.isError, "fs_write creates a file", text(r));
r = await client.callTool({ name: "fs_read", arguments: { path: "ts/hello.txt" } });
check(!r.isError, "fs_read reads it", text(r));
const digest = r.structuredContent?.digest;
check(typeof digest === "string" && text(r).includes(`digest: ${digest}`), "fs_read states the digest in text and structured content", r);
const m = /^2:([0-9a-f]{8})\|two$/m.exec(text(r));
check(m !== null, "fs_read shows an anchor for line 2", text(r));
r = await client.callTool({
  name: "fs_edit",
  arguments: { path: "ts/hello.txt", digest, hunks: [{ op: "replace", start: `2:${m[1]}`, lines: ["TWO"] }] },
});
check(!r.isError, "fs_edit applies a hunk addressed by the read's anchor", text(r));
check(readFileSync(join(ws, "ts/hello.txt"), "utf8") === "one\nTWO\nthree\n", "the file on disk holds the edit");
r = await client.callTool({
  name: "fs_edit",
  arguments: { path: "ts/hello.txt", digest, hunks: [{ op: "replace", start: `2:${m[1]}`, lines: ["again"] }] },
});
check(r.isError && /stale/.test(text(r)), "a replayed edit is refused as stale, in band", text(r));

// bash: inside the workspace works; a write outside it fails.
r = await client.callTool({ name: "bash", arguments: { command: "echo inside > ts/bash.txt && cat ts/bash.txt" } });
check(!r.isError && text(r).includes("inside"), "bash writes inside the workspace", text(r));
check(readFileSync(join(ws, "ts/bash.txt"), "utf8") === "inside\n", "the jailed write reached the workspace");
const escape = join(outside, "escape.txt");
r = await client.callTool({ name: "bash", arguments: { command: `echo escaped > '${escape}'` } });
check(r.isError, "bash cannot write outside the workspace", text(r));
check(!existsSync(escape), "nothing was written outside the workspace");

// A bad argument is an in-band error the model can read.
r = await client.callTool({ name: "fs_read", arguments: { path: 5 } });
check(r.isError && text(r).includes("invalid arguments"), "a wrongly typed argument is an in-band error", text(r));
r = await client.callTool({ name: "fs_read", arguments: { pth: "x" } });
check(r.isError && text(r).includes("pth"), "an unknown argument is an in-band error naming it", text(r));

// An unknown tool is a protocol error, and the session goes on.
let unknownFailed = false;
try {
  await client.callTool({ name: "no_such_tool", arguments: {} });
} catch {
  unknownFailed = true;
}
check(unknownFailed, "an unknown tool is refused");

// Progress notifications carry the output tail of a long command.
const notes = [];
r = await client.callTool(
  { name: "bash", arguments: { command: "for i in 1 2 3 4 5; do echo tick $i; sleep 0.3; done" } },
  undefined,
  { onprogress: (p) => notes.push(p) },
);
check(!r.isError, "a long bash completes", text(r));
check(notes.length > 0 && notes.some((n) => /tick/.test(n.message ?? "")), "progress notifications carry the output tail", notes);
for (let i = 1; i < notes.length; i++) {
  check(notes[i].progress > notes[i - 1].progress, `progress ${i} increases`, notes);
}

// Cancelling a long bash kills it; the session goes on.
const ac = new AbortController();
const call = client.callTool(
  { name: "bash", arguments: { command: "while true; do echo t >> ts/ticks; sleep 0.05; done", timeout_ms: 600000 } },
  undefined,
  { signal: ac.signal },
);
await sleep(1000);
ac.abort("the test cancels");
let cancelled = false;
try {
  await call;
} catch {
  cancelled = true;
}
check(cancelled, "the cancelled call rejects");
await sleep(700);
const ticks = join(ws, "ts/ticks");
check(existsSync(ticks), "the long command ran before it was cancelled");
const size1 = statSync(ticks).size;
await sleep(700);
check(statSync(ticks).size === size1, "the cancelled command stopped writing (its process tree was killed)");

await client.ping();
r = await client.callTool({ name: "fs_read", arguments: { path: "ts/hello.txt" } });
check(!r.isError && text(r).includes("|TWO"), "the server answers after the cancellation", text(r));

await client.close();
console.log("tsclient: ok");
