// End-to-end: the plugin's entry, loaded with a fake OpenClaw `api`, drives
// a whole session through the real Go binary (LOSSLESS_BIN; .ci/run builds
// it): bootstrap from a session file, afterTurn ×N, assemble within a
// budget, compact, a crash and restart, dispose.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import plugin from "../index.js";

const BIN = process.env.LOSSLESS_BIN;
const skip = BIN ? false : "LOSSLESS_BIN is not set (build it: go build -o /tmp/lossless ./cmd/lossless)";

let dir;
let engine;
const sessionId = "0a8c6f1e-5d1b-4c55-9d7e-3f1b2a4c5d6e";
const sessionKey = "agent:main:e2e";
let sessionFile;
const view = []; // the host's whole session view

function user(text, ts) {
  return { role: "user", content: [{ type: "text", text }], timestamp: ts };
}
function assistant(text, ts) {
  return {
    role: "assistant",
    content: [{ type: "text", text }],
    api: "anthropic-messages",
    provider: "anthropic",
    model: "claude-sonnet-4-5",
    usage: { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, totalTokens: 15, cost: { input: 0, output: 0, total: 0 } },
    stopReason: "stop",
    timestamp: ts,
    "x-unknown-field": { kept: "<verbatim> & é" },
  };
}

function api(pluginConfig) {
  const registered = {};
  return {
    registered,
    api: {
      id: "lossless",
      pluginConfig,
      logger: { info() {}, warn() {}, error() {}, debug() {} },
      registerContextEngine(id, factory) {
        registered[id] = factory;
      },
    },
  };
}

before(async () => {
  if (!BIN) return;
  dir = mkdtempSync(join(tmpdir(), "lossless-plugin-"));
  sessionFile = join(dir, `${sessionId}.jsonl`);
  const lines = [{ type: "session", version: 4, id: sessionId, timestamp: "2026-11-30T20:00:00.000Z", cwd: dir }];
  let parent = null;
  for (let i = 0; i < 3; i++) {
    for (const m of [user(`question ${i}: what is in file${i}.txt?`, 1000 + i * 2), assistant(`answer ${i}: file${i}.txt holds the number ${i * 7}.`, 1001 + i * 2)]) {
      const id = `e${String(lines.length).padStart(7, "0")}`;
      lines.push({ type: "message", id, parentId: parent, timestamp: "2026-11-30T20:00:01.000Z", message: m });
      parent = id;
      view.push(m);
    }
  }
  writeFileSync(sessionFile, lines.map((l) => JSON.stringify(l)).join("\n") + "\n");
  const { registered, api: fakeApi } = api({ storeDir: join(dir, "store"), bridge: { command: BIN } });
  plugin.register(fakeApi);
  assert.equal(typeof registered.lossless, "function");
  engine = await registered.lossless({ agentDir: join(dir, "agent"), workspaceDir: dir });
});

after(async () => {
  await engine?.dispose();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test("the engine registers with the Go engine's info and optional methods", { skip }, () => {
  assert.equal(engine.info.id, "lossless");
  assert.ok(engine.info.name);
  assert.equal(engine.info.ownsCompaction, true);
  for (const m of ["ingest", "assemble", "compact", "bootstrap", "afterTurn", "ingestBatch", "dispose"]) {
    assert.equal(typeof engine[m], "function", m);
  }
});

test("bootstrap imports the session file", { skip }, async () => {
  const res = await engine.bootstrap({ sessionId, sessionKey, sessionFile });
  assert.equal(res.bootstrapped, true);
  assert.equal(res.importedMessages, 6);
  // Idempotent: a second bootstrap imports nothing new.
  const again = await engine.bootstrap({ sessionId, sessionKey, sessionFile });
  assert.equal(again.importedMessages ?? 0, 0);
});

test("afterTurn ×N stores each turn's new messages", { skip }, async () => {
  for (let t = 0; t < 5; t++) {
    const pre = view.length;
    view.push(user(`turn ${t}: please grep for TODO-${t}`, 2000 + t * 2));
    view.push(assistant(`turn ${t}: found TODO-${t} in main.go line ${t + 10}`, 2001 + t * 2));
    await engine.afterTurn({ sessionId, sessionKey, sessionFile, messages: view, prePromptMessageCount: pre, tokenBudget: 100000 });
  }
  // The same turn again is not stored twice.
  await engine.afterTurn({ sessionId, sessionKey, sessionFile, messages: view, prePromptMessageCount: view.length - 2 });
});

test("assemble returns the stored conversation, verbatim, within the budget", { skip }, async () => {
  const all = await engine.assemble({ sessionId, sessionKey, messages: view, tokenBudget: 100000, availableTools: new Set(["read"]) });
  assert.deepEqual(all.messages, view, "a big budget gives back every message exactly");
  assert.ok(all.estimatedTokens > 0);

  const budget = 120;
  const small = await engine.assemble({ sessionId, sessionKey, messages: view, tokenBudget: budget });
  assert.ok(small.estimatedTokens <= budget, `estimated ${small.estimatedTokens} > budget ${budget}`);
  assert.ok(small.messages.length > 0 && small.messages.length < view.length);
  assert.deepEqual(small.messages.at(-1), view.at(-1), "the newest message is kept");
});

test("compact answers with the contract's shape and never claims tokens it did not free", { skip }, async () => {
  const res = await engine.compact({ sessionId, sessionKey, force: true, tokenBudget: 200, compactionTarget: "budget", currentTokenCount: 1000 });
  assert.equal(typeof res.ok, "boolean");
  assert.equal(typeof res.compacted, "boolean");
  if (res.compacted) {
    assert.ok(res.result, "compacted without a result");
    assert.ok(res.result.tokensAfter < res.result.tokensBefore, JSON.stringify(res.result));
  } else {
    assert.ok(res.reason, "not compacted without a reason");
  }
});

test(
  "compaction rotates the session: the next turn uses result.sessionId/sessionFile",
  { skip, todo: "rotation comes with the lossless compaction (H5); enable when compact reports compacted:true with a successor" },
  async () => {
    const res = await engine.compact({ sessionId, sessionKey, force: true, tokenBudget: 200, compactionTarget: "budget" });
    assert.equal(res.compacted, true);
    const next = res.result;
    assert.ok(next.sessionId && next.sessionId !== sessionId, "a successor session id");
    assert.ok(next.sessionFile, "a successor session file");
    const pre = view.length;
    view.push(user("after rotation", 9000), assistant("still here", 9001));
    await engine.afterTurn({ sessionId: next.sessionId, sessionKey, sessionFile: next.sessionFile, messages: view, prePromptMessageCount: pre });
    const asm = await engine.assemble({ sessionId: next.sessionId, sessionKey, messages: view, tokenBudget: 100000 });
    assert.deepEqual(asm.messages.at(-1), view.at(-1));
  },
);

test("an aborted compact rejects with the abort reason", { skip }, async () => {
  const reason = new Error("run aborted");
  reason.name = "AbortError";
  await assert.rejects(engine.compact({ sessionId, sessionKey, abortSignal: AbortSignal.abort(reason) }), (e) => e === reason);
});

test("a crashed engine process surfaces as an error, restarts, and keeps the data", { skip }, async () => {
  const pid = engine.lossless.pid;
  assert.ok(pid);
  process.kill(pid, "SIGKILL");
  await new Promise((r) => setTimeout(r, 300));
  await assert.rejects(engine.assemble({ sessionId, sessionKey, messages: view, tokenBudget: 100000 }), {
    name: "LosslessBridgeCrashError",
  });
  const res = await engine.assemble({ sessionId, sessionKey, messages: view, tokenBudget: 100000 });
  assert.notEqual(engine.lossless.pid, pid);
  assert.equal(res.messages.length, view.length);
  assert.deepEqual(res.messages.at(-1), view.at(-1));
});

test("dispose ends the engine process", { skip }, async () => {
  const pid = engine.lossless.pid;
  await engine.dispose();
  engine = null;
  assert.throws(() => process.kill(pid, 0), { code: "ESRCH" });
});
