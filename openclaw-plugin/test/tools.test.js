// The recall tools as OpenClaw registers them: api.registerTool factories
// named in the registration and in the manifest's contracts.tools, bound to
// the calling session, executing `tools/call` on the shared engine process.
// The definitions must match the Go engine's (`lossless tools --json`).
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

import plugin from "../index.js";
import { shutdownEngines } from "../lib/engine.js";
import { TOOL_DEFS, TOOL_NAMES } from "../lib/tools.js";

const fakeServer = fileURLToPath(new URL("../fixtures/fake-server.mjs", import.meta.url));
const manifest = JSON.parse(readFileSync(new URL("../openclaw.plugin.json", import.meta.url), "utf8"));
const BIN = process.env.LOSSLESS_BIN;

after(shutdownEngines);

let stores = 0;

/** Registers the plugin with a mocked api; returns what it registered. */
function register(bridge = {}) {
  const got = { engines: {}, tools: [] };
  const api = {
    id: "lossless",
    pluginConfig: { storeDir: `/nowhere/tools-${++stores}`, bridge: { command: process.execPath, args: [fakeServer], ...bridge } },
    logger: { info() {}, warn() {}, error() {}, debug() {} },
    registerContextEngine(id, factory) {
      got.engines[id] = factory;
    },
    registerTool(tool, opts) {
      got.tools.push({ tool, opts });
    },
  };
  plugin.register(api);
  return got;
}

const ctx = { agentId: "main", sessionKey: "agent:main:main", sessionId: "sess-1", config: { models: { providers: { p: { apiKey: "sk-secret" } } } } };

test("register() adds the engine and one tool factory per tool, named, and starts nothing", () => {
  const got = register();
  assert.deepEqual(Object.keys(got.engines), ["lossless"]);
  assert.deepEqual(
    got.tools.map((t) => t.opts),
    TOOL_NAMES.map((name) => ({ name })),
  );
  for (const { tool } of got.tools) assert.equal(typeof tool, "function", "a factory (ctx) => tool");
  // The loader refuses tools whose names are not under contracts.tools.
  assert.deepEqual([...manifest.contracts.tools].sort(), [...TOOL_NAMES].sort());
  assert.deepEqual(TOOL_NAMES, ["lcm_grep", "lcm_describe", "lcm_expand"]);
  for (const name of TOOL_NAMES) assert.ok(manifest.toolMetadata[name], `toolMetadata.${name}`);
  // Building the tools (OpenClaw does so for every run) starts nothing.
  const tools = got.tools.map(({ tool }) => tool(ctx));
  const engine = got.engines.lossless({});
  assert.equal(engine.lossless.pid, undefined);
  for (const [i, t] of tools.entries()) {
    assert.equal(t.name, TOOL_DEFS[i].name);
    assert.equal(t.description, TOOL_DEFS[i].description);
    assert.deepEqual(t.parameters, TOOL_DEFS[i].parameters);
    assert.equal(t.parameters.type, "object");
    assert.equal(typeof t.label, "string");
    assert.equal(typeof t.execute, "function");
    // OpenClaw's tool search (on by default) defers every plugin tool not
    // marked direct-only to a catalog reached through tool_call; the
    // engine's prompt text and summaries name these tools directly.
    assert.equal(t.catalogMode, "direct-only", `${t.name} is not direct-only`);
  }
});

test("execute sends tools/call bound to the calling session and returns the text", async () => {
  const got = register();
  const grep = got.tools.find((t) => t.opts.name === "lcm_grep").tool(ctx);
  const res = await grep.execute("call-1", { query: "HELIOTROPE", scope: "agent" });
  assert.equal(res.content.length, 1);
  assert.equal(res.content[0].type, "text");
  const called = JSON.parse(res.content[0].text).called;
  assert.deepEqual(called, {
    name: "lcm_grep",
    arguments: { query: "HELIOTROPE", scope: "agent" },
    agentId: "main",
    sessionKey: "agent:main:main",
    sessionId: "sess-1",
  });
  assert.deepEqual(res.details, { tool: "lcm_grep", agentId: "main", sessionKey: "agent:main:main", sessionId: "sess-1" });
  for (const reserved of ["status", "ok", "success", "error", "timedOut", "exitCode"]) {
    assert.equal(res.details[reserved], undefined, `details.${reserved} is graded by OpenClaw`);
  }

  // A tool built for a context without a session sends none (the engine
  // then needs sessionId in the arguments).
  const bare = got.tools.find((t) => t.opts.name === "lcm_expand").tool({});
  const res2 = JSON.parse((await bare.execute("call-2", { id: "sum_1", sessionId: "other" })).content[0].text).called;
  assert.deepEqual(res2, { name: "lcm_expand", arguments: { id: "sum_1", sessionId: "other" } });
});

test("the engine's and the tools' calls share one process", async () => {
  const got = register();
  const engine = got.engines.lossless({});
  await engine.ingest({ sessionId: "s", message: { role: "user", content: "x" } });
  const tool = got.tools[0].tool(ctx);
  await tool.execute("c", { query: "x" });
  assert.ok(engine.lossless.pid);
  assert.equal(engine.lossless.restarts, 0);
  const pid = await engine.lossless.client.request("pid", {});
  assert.equal(pid, engine.lossless.pid);
});

test("a failing tool call throws (OpenClaw makes it an error tool result with the message)", async () => {
  const { createTool } = await import("../lib/tools.js");
  // An engine error (the fake server fails tools/call for lcm_fail)
  // surfaces as a thrown Error naming the tool.
  const bad = createTool({ name: "lcm_fail", description: "", parameters: { type: "object" } }, ctx, {
    pluginConfig: { storeDir: "/nowhere/tools-fail", bridge: { command: process.execPath, args: [fakeServer] } },
  });
  await assert.rejects(bad.execute("c", {}), (err) => {
    assert.match(err.message, /^lcm_fail failed: .*no such summary/);
    return true;
  });
  // The engine process cannot start: also a thrown error, not a crash.
  const broken = createTool(TOOL_DEFS[0], ctx, { pluginConfig: { storeDir: "/nowhere/x", bridge: { command: "/nonexistent/lossless" } } });
  await assert.rejects(broken.execute("c", { query: "x" }), /lcm_grep failed: .*cannot start/);
});

test("an aborted tool call rejects with the abort reason and cancels the request", async () => {
  const { createTool } = await import("../lib/tools.js");
  const pluginConfig = { storeDir: "/nowhere/tools-abort", bridge: { command: process.execPath, args: [fakeServer] } };
  const hang = createTool({ name: "lcm_hang", description: "", parameters: { type: "object" } }, ctx, { pluginConfig });
  const ac = new AbortController();
  const p = hang.execute("c", {}, ac.signal);
  setTimeout(() => ac.abort(new Error("turn aborted")), 50);
  await assert.rejects(p, /turn aborted/);
});

test("tools.json matches `lossless tools --json`", { skip: BIN ? false : "LOSSLESS_BIN is not set" }, (t) => {
  let out;
  try {
    out = execFileSync(BIN, ["tools", "--json"], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  } catch (err) {
    t.skip(`${BIN} has no \`tools --json\` yet (${String(err.stderr ?? err.message).trim().split("\n")[0]})`);
    return;
  }
  assert.deepEqual(JSON.parse(out), TOOL_DEFS, "regenerate lib/tools.json: lossless tools --json > openclaw-plugin/lib/tools.json");
});
