// The engine's recall tools under OpenClaw's DEFAULT tool settings: no
// `tools` section at all in openclaw.json, so the profile is unset and tool
// search is on in its default mode ("tools": tool_search, tool_describe and
// tool_call, every other catalogued tool deferred behind them).
//
// OpenClaw 2026.9.6 keeps a tool model-visible under tool search only when it
// is a core coding primitive, a name the run's delivery policy requires, or
// a tool marked `catalogMode: "direct-only"` (shouldCatalogTool and
// isDirectVisibleCatalogTool in dist/local-model-lean-*.mjs); the manifest's
// toolMetadata (optional, profiles, replaySafe, sideEffecting) does not change
// that. The plugin marks lcm_grep, lcm_describe and lcm_expand direct-only,
// so they are in the request's `tools` and callable by name (a direct-only
// tool is not in the catalog: tool_call does not reach it). A deferred tool
// is called through tool_call {id, args}, which the engine's prompt text
// (systemPromptAddition) gives as the way when the tools are listed as
// deferred. Both cases run here, each through a real gateway:
//
// 1. the plugin as shipped: long turns until the engine has compacted and
//    the model was shown a summary id, then a turn in which the fake model
//    calls lcm_expand directly on that id;
// 2. a copy of the plugin without the direct-only mark (what an older build
//    gives): the tools are deferred, and the fake model reaches lcm_grep and
//    lcm_expand through tool_call, as the engine's text says.

import { describe, before, after, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { OpenClawEnv, skipReason, freePort, chatRequests, contentText, summaryIds, requestsForPrompt, degradationLines, PLUGIN_DIR } from "./harness.mjs";
import { startFakeModel } from "./fake-model.mjs";
import { filler } from "./text.mjs";

const skip = skipReason();

const KEY = "agent:main:e2e-tools";
const CONTEXT_WINDOW = 32_000;
const MAX_LONG_TURNS = 9;
const LCM = ["lcm_grep", "lcm_describe", "lcm_expand"];
const marker = (i) => `TOOLS-TURN-${String(i).padStart(2, "0")}-MARKER`;
const P = {
  direct: "Expand the newest summary, please. (EXPAND-DIRECT)",
  grepViaToolCall: "Search the history for the marker through the tool catalog. (GREP-VIA-TOOL-CALL)",
  expandViaToolCall: "Expand that summary through the tool catalog. (EXPAND-VIA-TOOL-CALL)",
};

/** The names in a request's `tools`. */
const toolNames = (r) => new Set((r.body?.tools ?? []).map((t) => t.function?.name));
/** The system message's text of a request. */
const systemText = (r) => (r.body?.messages ?? []).filter((m) => m.role === "system" || m.role === "developer").map((m) => contentText(m.content)).join("\n");
/**
 * The text of the tool result answering the scripted call of `toolName` in
 * the turn whose user message holds `prompt`: in the request that follows
 * the call, the tool message whose tool_call_id is that of the assistant's
 * call of `toolName` (OpenClaw rewrites call ids, so they are read there).
 */
function resultAfterCall(fake, prompt, toolName) {
  const reqs = requestsForPrompt(fake, prompt);
  const at = reqs.findIndex((r) => r.response?.toolCalls?.some((c) => c.function.name === toolName));
  assert.ok(at >= 0, `the scripted ${toolName} call was not made`);
  const next = reqs[at + 1];
  assert.ok(next, `no model request after the ${toolName} call`);
  const msgs = next.body.messages ?? [];
  const call = msgs.flatMap((m) => (m.role === "assistant" ? m.tool_calls ?? [] : [])).filter((c) => c.function?.name === toolName).at(-1);
  assert.ok(call, `the request after ${toolName} does not hold the call`);
  const msg = msgs.find((m) => m.role === "tool" && m.tool_call_id === call.id);
  assert.ok(msg, `the request after ${toolName} has no tool result for ${call.id}`);
  return contentText(msg.content);
}

/** The deferred-tool directory OpenClaw puts in the system prompt under tool search, from its heading to the next blank-line-separated block's end. */
const deferredDirectory = (text) => {
  const at = text.indexOf("Available deferred-schema tools:");
  return at < 0 ? "" : text.slice(at, text.indexOf("\n\n", at) < 0 ? undefined : text.indexOf("\n\n", at));
};

/** Long turns until a summary id reaches the model; returns the newest one (null if none did). */
async function untilSummary(fake, turn) {
  for (let i = 1; i <= MAX_LONG_TURNS; i++) {
    await turn(`${marker(i)}: a long note for the record. ${filler(12_000, 300 + i)}`);
    const ids = chatRequests(fake).flatMap((r) => summaryIds(r));
    if (ids.length) return ids.at(-1);
  }
  return null;
}

/** Sets up env with OpenClaw's default tool settings, the plugin in pluginDir, and the engine compacting early; starts the gateway. */
async function setUp(env, fake, pluginDir, S) {
  env.writeConfig(env.baseConfig({ fake, contextWindow: CONTEXT_WINDOW, gatewayPort: await freePort(), tools: null }));
  S.install = await env.install({ dir: pluginDir });
  if (S.install.code !== 0) throw new Error(`plugin install failed (${S.install.code}):\n${S.install.stdout}\n${S.install.stderr}`);
  S.toolsConfig = env.readConfig().tools;
  env.selectEngine("lossless", env.engineConfig({ freshTailMessages: 2, leafChunkTokens: 2000, leafTargetTokens: 300, contextThreshold: 0.3 }));
  await env.startGateway();
  return async (message) => {
    const t = await env.turn({ sessionKey: KEY, message });
    if (t.code !== 0) S.errors.push(`turn "${message.slice(0, 40)}" exited ${t.code}: ${t.stderr.slice(-1500)}`);
    return t;
  };
}

describe("OpenClaw default tool settings: the lcm tools are direct tools", { skip }, () => {
  let env;
  let fake;
  const S = { errors: [], expandId: null };

  before(
    async () => {
      env = new OpenClawEnv({ name: "tools" });
      fake = await startFakeModel({ logFile: path.join(env.root, "model-requests.jsonl"), contextLimitTokens: CONTEXT_WINDOW });
      const turn = await setUp(env, fake, PLUGIN_DIR, S);
      S.expandId = await untilSummary(fake, turn);
      if (S.expandId) {
        // The engine's own prompt text names the tools: call one by name.
        fake.enqueue({ toolCall: { name: "lcm_expand", arguments: { id: S.expandId, maxTokens: 3000 } } });
        await turn(P.direct);
      } else {
        S.errors.push(`no <lcm_summary> reached the model in ${MAX_LONG_TURNS} long turns; lcm_expand was not tried`);
      }
      await env.stopGateway();
      S.requests = chatRequests(fake);
    },
    { timeout: 15 * 60_000 },
  );

  after(async () => {
    await fake?.close();
    await env?.cleanup();
  });

  test("the run uses OpenClaw's default tool settings: no tools section, tool search on", () => {
    assert.equal(S.toolsConfig, undefined, `openclaw.json has a tools section: ${JSON.stringify(S.toolsConfig)}`);
    const withTools = S.requests.filter((r) => r.body?.tools?.length);
    assert.ok(withTools.length > 0, "no request carried tools");
    for (const r of withTools) {
      const names = toolNames(r);
      assert.ok(names.has("tool_search") && names.has("tool_call"), `request ${r.seq} has no tool search controls: ${[...names].join(", ")}`);
    }
  });

  test("every turn ran on lossless (no degradation, no failed turn)", () => {
    assert.deepEqual(S.errors, []);
    assert.deepEqual(degradationLines(env.gatewayOutput()), []);
  });

  test("lcm_grep, lcm_describe and lcm_expand are direct tools of every request, not in the deferred directory", () => {
    const problems = [];
    for (const r of S.requests.filter((x) => x.body?.tools?.length)) {
      const names = toolNames(r);
      for (const n of LCM) if (!names.has(n)) problems.push(`request ${r.seq}: ${n} not in tools`);
      const dir = deferredDirectory(systemText(r));
      for (const n of LCM) if (new RegExp(`^- ${n}\\b`, "m").test(dir)) problems.push(`request ${r.seq}: ${n} listed as deferred`);
    }
    assert.deepEqual(problems, []);
  });

  test("assemble gets the lcm tools and tool_call in availableTools, and its prompt text reaches the system prompt and says how to call them", () => {
    const assembles = env.calls("assemble").filter((c) => c.params?.availableTools?.length);
    assert.ok(assembles.length > 0, "no assemble call carried availableTools");
    const first = assembles[0];
    for (const n of [...LCM, "tool_call"]) assert.ok(first.params.availableTools.includes(n), `availableTools lacks ${n}: ${first.params.availableTools.join(", ")}`);
    const addition = assembles.map((c) => c.result?.systemPromptAddition).find(Boolean);
    assert.ok(addition, "no assemble returned a systemPromptAddition");
    assert.match(addition, /call these tools: lcm_grep/);
    assert.match(addition, /through tool_call with the tool name in "id" and its parameters in "args"/);
    assert.ok(
      S.requests.some((r) => systemText(r).includes(addition)),
      `no request's system prompt holds the engine's text: ${addition}`,
    );
  });

  test("a direct lcm_expand call on a summary id returns the raw stored messages", () => {
    assert.ok(S.expandId, `no summary id to expand (${S.errors.join("; ")})`);
    const result = resultAfterCall(fake, "EXPAND-DIRECT", "lcm_expand");
    assert.ok(!/not found|unknown tool/i.test(result.slice(0, 300)), `lcm_expand failed: ${result.slice(0, 400)}`);
    assert.match(result, /TOOLS-TURN-\d\d-MARKER: a long note for the record\./, `the lcm_expand result holds no raw message: ${result.slice(0, 800)}`);
  });
});

describe("a plugin build without the direct-only mark: the lcm tools are deferred, reached through tool_call as the engine's text says", { skip }, () => {
  let env;
  let fake;
  const S = { errors: [], expandId: null };

  before(
    async () => {
      env = new OpenClawEnv({ name: "tools-deferred" });
      fake = await startFakeModel({ logFile: path.join(env.root, "model-requests.jsonl"), contextLimitTokens: CONTEXT_WINDOW });
      // The plugin, copied, with tools that OpenClaw may defer.
      const dir = path.join(env.root, "plugin-deferred");
      fs.cpSync(PLUGIN_DIR, dir, { recursive: true, filter: (src) => !src.includes(`${path.sep}node_modules`) });
      const toolsJs = path.join(dir, "lib", "tools.js");
      const src = fs.readFileSync(toolsJs, "utf8");
      const patched = src.replace(/^\s*catalogMode: "direct-only",\n/m, "");
      if (patched === src) throw new Error("lib/tools.js has no catalogMode line to remove");
      fs.writeFileSync(toolsJs, patched);
      const turn = await setUp(env, fake, dir, S);
      S.expandId = await untilSummary(fake, turn);
      if (S.expandId) {
        fake.enqueue({ toolCall: { name: "tool_call", arguments: { id: "lcm_expand", args: { id: S.expandId, maxTokens: 3000 } } } });
        await turn(P.expandViaToolCall);
      } else {
        S.errors.push(`no <lcm_summary> reached the model in ${MAX_LONG_TURNS} long turns; lcm_expand was not tried`);
      }
      fake.enqueue({ toolCall: { name: "tool_call", arguments: { id: "lcm_grep", args: { query: "TOOLS-TURN-01-MARKER" } } } });
      await turn(P.grepViaToolCall);
      await env.stopGateway();
      S.requests = chatRequests(fake);
    },
    { timeout: 15 * 60_000 },
  );

  after(async () => {
    await fake?.close();
    await env?.cleanup();
  });

  test("every turn ran on lossless (no degradation, no failed turn)", () => {
    assert.equal(S.toolsConfig, undefined, `openclaw.json has a tools section: ${JSON.stringify(S.toolsConfig)}`);
    assert.deepEqual(S.errors, []);
    assert.deepEqual(degradationLines(env.gatewayOutput()), []);
  });

  test("the lcm tools are not in the request's tools but listed as deferred in the system prompt", () => {
    const problems = [];
    const withTools = S.requests.filter((r) => r.body?.tools?.length);
    if (!withTools.length) problems.push("no request carried tools");
    for (const r of withTools) {
      const names = toolNames(r);
      if (!names.has("tool_call")) problems.push(`request ${r.seq}: no tool_call`);
      for (const n of LCM) if (names.has(n)) problems.push(`request ${r.seq}: ${n} is a direct tool`);
      const dir = deferredDirectory(systemText(r));
      for (const n of LCM) if (!new RegExp(`^- ${n}\\b`, "m").test(dir)) problems.push(`request ${r.seq}: ${n} not in the deferred directory`);
    }
    assert.deepEqual(problems, []);
  });

  test("the engine's text in the system prompt gives tool_call as the way to a deferred lcm tool", () => {
    const addition = env.calls("assemble").map((c) => c.result?.systemPromptAddition).find(Boolean);
    assert.ok(addition, "no assemble returned a systemPromptAddition");
    assert.match(addition, /listed as deferred \(not directly callable\)/);
    assert.match(addition, /tool_call\(\{"id": "lcm_expand", "args": \{\.\.\.\}\}\)/);
    assert.ok(S.requests.some((r) => systemText(r).includes(addition)), `no request's system prompt holds the engine's text: ${addition}`);
  });

  test("tool_call {id: lcm_expand} on a summary id returns the raw stored messages", () => {
    assert.ok(S.expandId, `no summary id to expand (${S.errors.join("; ")})`);
    const result = resultAfterCall(fake, "EXPAND-VIA-TOOL-CALL", "tool_call");
    assert.ok(!/unknown tool|"status": "error"/i.test(result), `tool_call lcm_expand failed: ${result.slice(0, 400)}`);
    assert.match(result, /TOOLS-TURN-\d\d-MARKER: a long note for the record\./, `the result holds no raw message: ${result.slice(0, 800)}`);
  });

  test("tool_call {id: lcm_grep} finds the raw stored message", () => {
    const result = resultAfterCall(fake, "GREP-VIA-TOOL-CALL", "tool_call");
    assert.ok(!/unknown tool|"status": "error"/i.test(result), `tool_call lcm_grep failed: ${result.slice(0, 400)}`);
    assert.match(result, /TOOLS-TURN-01-MARKER/, `the result holds no match: ${result.slice(0, 800)}`);
  });
});
