// Protocol tests of the plugin's client against a scripted stand-in server
// (fixtures/fake-server.mjs): wire conversion, host callbacks, abort →
// $/cancelRequest, engine errors, crash → error → restart. The end-to-end
// tests against the real Go binary are in plugin.test.js.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";

import plugin from "../index.js";
import { toWire } from "../lib/engine.js";
import { toLlmCompleteParams } from "../lib/client.js";

const fakeServer = fileURLToPath(new URL("../fixtures/fake-server.mjs", import.meta.url));

async function fakeEngine(extra = {}) {
  let factory;
  const api = {
    pluginConfig: { storeDir: "/nowhere", bridge: { command: process.execPath, args: [fakeServer], ...extra } },
    logger: { info() {}, warn() {}, error() {}, debug() {} },
    registerContextEngine(id, f) {
      assert.equal(id, "lossless");
      factory = f;
    },
  };
  plugin.register(api);
  assert.equal(typeof factory, "function");
  return factory({ agentDir: "/agent", workspaceDir: "/ws" });
}

test("the engine exposes exactly the methods the server implements", async () => {
  const engine = await fakeEngine();
  try {
    assert.deepEqual(engine.info, { id: "fake", name: "Fake engine", ownsCompaction: true });
    for (const m of ["ingest", "assemble", "compact", "maintain", "prepareSubagentSpawn", "afterTurn", "dispose"]) {
      assert.equal(typeof engine[m], "function", m);
    }
    for (const m of ["bootstrap", "ingestBatch", "commitTurn", "onSubagentEnded"]) {
      assert.equal(engine[m], undefined, `${m} must be absent: OpenClaw checks for it`);
    }
  } finally {
    await engine.dispose();
  }
});

test("params cross the wire as OpenClaw JSON (Set → array, functions and signals out)", async () => {
  const engine = await fakeEngine();
  try {
    const ac = new AbortController();
    const res = await engine.ingest({
      sessionId: "s",
      message: { role: "user", content: "<b>é</b>", extra: { kept: [1, 2] } },
      abortSignal: ac.signal,
      runtimeContext: { cwd: "/w", tokenBudget: 9, llm: { complete: async () => ({ text: "" }) }, rewriteTranscriptEntries: async () => ({}) },
    });
    assert.equal(res.ingested, true);
    assert.deepEqual(res.echo, {
      sessionId: "s",
      message: { role: "user", content: "<b>é</b>", extra: { kept: [1, 2] } },
      runtimeContext: { cwd: "/w", tokenBudget: 9 },
    });
    assert.deepEqual(res.hostCallbacks.sort(), ["llm.complete", "rewriteTranscriptEntries"]);

    const asm = await engine.assemble({ sessionId: "s", messages: [], availableTools: new Set(["lcm_grep", "read"]) });
    assert.deepEqual(asm.availableTools, ["lcm_grep", "read"]);
  } finally {
    await engine.dispose();
  }
});

test("toWire leaves plain params alone", () => {
  assert.deepEqual(toWire({ sessionId: "a", tokenBudget: 5 }), { wire: { sessionId: "a", tokenBudget: 5 }, hostCallbacks: [] });
  assert.deepEqual(toWire(undefined), { wire: null, hostCallbacks: [] });
});

test("llm.complete is called back with OpenClaw's shape and its answer reaches the engine", async () => {
  const engine = await fakeEngine();
  try {
    let got;
    const res = await engine.assemble({
      sessionId: "s",
      prompt: "llm",
      messages: [
        { role: "user", content: [{ type: "text", text: "hello" }, { type: "image", data: "AA==", mimeType: "image/png" }] },
        { role: "assistant", content: [{ type: "text", text: "hi" }] },
        { role: "toolResult", toolCallId: "t", content: [{ type: "text", text: "out" }] },
      ],
      runtimeContext: {
        llm: {
          complete: async (p) => {
            got = p;
            return { text: "summary from host", provider: "p", model: "m" };
          },
        },
      },
    });
    assert.equal(res.systemPromptAddition, "summary from host");
    assert.equal(got.systemPrompt, "S");
    assert.equal(got.maxTokens, 5);
    assert.ok(got.signal instanceof AbortSignal);
    assert.deepEqual(got.messages, [
      { role: "user", content: "hello" },
      { role: "assistant", content: "hi" },
      { role: "user", content: "out" },
    ]);
  } finally {
    await engine.dispose();
  }
});

test("a host callback that throws becomes an engine error", async () => {
  const engine = await fakeEngine();
  try {
    await assert.rejects(
      engine.assemble({ sessionId: "s", prompt: "llm", messages: [], runtimeContext: { llm: { complete: async () => { throw new Error("quota"); } } } }),
      /llm: quota/,
    );
    // A request without the callback gets a clear error from the client side.
    await assert.rejects(engine.assemble({ sessionId: "s", prompt: "llm", messages: [] }), /not available/);
  } finally {
    await engine.dispose();
  }
});

test("the server can cancel a host callback: llm.complete's signal aborts", async () => {
  const engine = await fakeEngine();
  try {
    let aborted = false;
    const res = engine.assemble({
      sessionId: "s",
      prompt: "llm-cancel",
      messages: [],
      runtimeContext: {
        llm: {
          complete: (p) =>
            new Promise((_, reject) => {
              p.signal.addEventListener("abort", () => {
                aborted = true;
                reject(new Error("aborted by engine"));
              });
            }),
        },
      },
    });
    await assert.rejects(res, /aborted by engine/);
    assert.equal(aborted, true);
  } finally {
    await engine.dispose();
  }
});

test("rewriteTranscriptEntries is called back through maintain", async () => {
  const engine = await fakeEngine();
  try {
    let req;
    const res = await engine.maintain({
      sessionId: "s",
      sessionFile: "/f",
      runtimeContext: {
        rewriteTranscriptEntries: async (r) => {
          req = r;
          return { changed: true, bytesFreed: 42, rewrittenEntries: 1 };
        },
      },
    });
    assert.deepEqual(res, { changed: true, bytesFreed: 42, rewrittenEntries: 1 });
    assert.equal(req.replacements[0].entryId, "e1");
  } finally {
    await engine.dispose();
  }
});

test("an abort signal rejects with its reason and sends $/cancelRequest", async () => {
  const engine = await fakeEngine();
  try {
    const ac = new AbortController();
    const p = engine.compact({ sessionId: "s", sessionKey: "k", abortSignal: ac.signal, prompt: "x" });
    const reason = new Error("run aborted");
    reason.name = "AbortError";
    ac.abort(reason);
    await assert.rejects(p, (err) => err === reason);

    // An already-aborted signal rejects without a request.
    await assert.rejects(engine.compact({ sessionId: "s", sessionKey: "k", abortSignal: AbortSignal.abort() }), { name: "AbortError" });

    // A hanging call aborted mid-way: the server is told which id to cancel.
    const ac2 = new AbortController();
    const hang = engine.assemble({ sessionId: "s", prompt: "hang", messages: [], abortSignal: ac2.signal });
    setTimeout(() => ac2.abort(), 20);
    await assert.rejects(hang, { name: "AbortError" });
    // (The first abort came before the request was written, so only the
    // hanging request needed a cancellation.)
    const cancelled = await engine.lossless.client.request("cancelled", {});
    assert.equal(cancelled.length, 1, `cancelled ids ${cancelled}`);
    assert.equal(typeof cancelled[0], "number");
  } finally {
    await engine.dispose();
  }
});

test("engine errors reject with the server's message and code", async () => {
  const engine = await fakeEngine();
  try {
    await assert.rejects(engine.compact({ sessionId: "s", sessionKey: "k" }), (err) => {
      assert.match(err.message, /unknown session/);
      assert.equal(err.code, -32000);
      return true;
    });
  } finally {
    await engine.dispose();
  }
});

test("prepareSubagentSpawn returns a rollback handle only when the engine prepared something", async () => {
  const engine = await fakeEngine();
  try {
    assert.equal(await engine.prepareSubagentSpawn({ parentSessionKey: "p", childSessionKey: "c", contextMode: "isolated" }), undefined);
    const prep = await engine.prepareSubagentSpawn({ parentSessionKey: "p", childSessionKey: "c", contextMode: "fork" });
    assert.equal(typeof prep.rollback, "function");
    await prep.rollback();
    await prep.rollback(); // safe twice
  } finally {
    await engine.dispose();
  }
});

test("a crash fails the call in flight, the process restarts, the next call works", async () => {
  const engine = await fakeEngine();
  try {
    const pid = engine.lossless.pid;
    await assert.rejects(engine.assemble({ sessionId: "s", prompt: "crash", messages: [] }), {
      name: "LosslessBridgeCrashError",
      message: /exited \(code 3/,
    });
    const res = await engine.assemble({ sessionId: "s", messages: [{ role: "user", content: "again" }] });
    assert.equal(res.messages[0].content, "again");
    assert.notEqual(engine.lossless.pid, pid);
    assert.equal(engine.lossless.restarts, 1);

    // Killed while idle: the next call reports it once, then it works again.
    process.kill(engine.lossless.pid, "SIGKILL");
    await new Promise((r) => setTimeout(r, 200));
    await assert.rejects(engine.ingest({ sessionId: "s", message: { role: "user", content: "x" } }), /signal SIGKILL/);
    const ok = await engine.ingest({ sessionId: "s", message: { role: "user", content: "x" } });
    assert.equal(ok.ingested, true);
  } finally {
    await engine.dispose();
  }
});

test("a missing binary makes the factory reject (OpenClaw quarantines it)", async () => {
  await assert.rejects(fakeEngine({ command: "/nonexistent/lossless-binary" }), /cannot start/);
});

test("toLlmCompleteParams keeps extra fields and maps roles", () => {
  const p = toLlmCompleteParams({ system: "s", model: "m", messages: [{ role: "compactionSummary", summary: "sum" }] });
  assert.deepEqual(p, { model: "m", purpose: "lossless context engine", signal: undefined, systemPrompt: "s", messages: [{ role: "user", content: "sum" }] });
});

test("afterTurn sends the whole view, or only the new messages when the engine says it reads only those", async () => {
  const view = [1, 2, 3, 4, 5].map((i) => ({ role: "user", content: `m${i}` }));
  const full = await fakeEngine();
  try {
    assert.equal(await full.afterTurn({ sessionId: "s", sessionFile: "/f", messages: view, prePromptMessageCount: 3 }), undefined);
    const got = await full.lossless.client.request("lastAfterTurn", {});
    assert.equal(got.messages.length, 5);
    assert.equal(got.prePromptMessageCount, 3);
  } finally {
    await full.dispose();
  }
  const trimmed = await fakeEngine({ args: [fakeServer, "--trim"] });
  try {
    await trimmed.afterTurn({ sessionId: "s", sessionFile: "/f", messages: view, prePromptMessageCount: 3 });
    const got = await trimmed.lossless.client.request("lastAfterTurn", {});
    assert.deepEqual(got.messages, view.slice(3));
    assert.equal(got.prePromptMessageCount, 0);
  } finally {
    await trimmed.dispose();
  }
});

test("a process that never initializes is killed after startTimeoutMs and the factory rejects", async () => {
  await assert.rejects(
    fakeEngine({ args: ["-e", "setInterval(() => {}, 1000)"], startTimeoutMs: 300 }),
    /did not initialize within 300 ms/,
  );
});
