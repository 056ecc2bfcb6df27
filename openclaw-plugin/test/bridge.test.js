// Protocol tests of the plugin's client against a scripted stand-in server
// (fixtures/fake-server.mjs): wire conversion, host callbacks, abort →
// $/cancelRequest, engine errors, crash → restart. The end-to-end tests
// against the real Go binary are in plugin.test.js.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";

import plugin from "../index.js";
import { toWire, shutdownEngines } from "../lib/engine.js";
import { ENGINE_INFO, ENGINE_METHODS } from "../lib/info.js";
import { toLlmCompleteParams } from "../lib/client.js";

const fakeServer = fileURLToPath(new URL("../fixtures/fake-server.mjs", import.meta.url));

after(shutdownEngines);

let stores = 0;

// An engine on the fake server, with its own process: the pool shares one
// process per command and config, so each call names another storeDir.
function fakeEngine(extra = {}, logger = { info() {}, warn() {}, error() {}, debug() {} }) {
  let factory;
  const api = {
    pluginConfig: { storeDir: `/nowhere/${++stores}`, bridge: { command: process.execPath, args: [fakeServer], ...extra } },
    logger,
    registerContextEngine(id, f) {
      assert.equal(id, "lossless");
      factory = f;
    },
    registerTool() {},
  };
  plugin.register(api);
  assert.equal(typeof factory, "function");
  return factory({ agentDir: "/agent", workspaceDir: "/ws" });
}

test("the factory returns at once with the Go engine's info and methods, and starts nothing", async () => {
  const engine = fakeEngine();
  assert.equal(typeof engine.then, "undefined", "a plain object, not a promise");
  assert.deepEqual(engine.info, ENGINE_INFO);
  engine.info.annotated = true; // the host may annotate its copy
  assert.equal(ENGINE_INFO.annotated, undefined);
  for (const m of ["ingest", "assemble", "compact", "dispose", ...ENGINE_METHODS]) {
    assert.equal(typeof engine[m], "function", m);
  }
  assert.equal(engine.lossless.pid, undefined, "no process before the first call");
  await engine.dispose();
  assert.equal(engine.lossless.pid, undefined, "dispose starts nothing either");
});

test("params cross the wire as OpenClaw JSON (Set → array, functions and signals out)", async () => {
  const engine = fakeEngine();
  try {
    const ac = new AbortController();
    const res = await engine.ingest({
      sessionId: "s",
      message: { role: "user", content: "<b>é</b>", extra: { kept: [1, 2] } },
      abortSignal: ac.signal,
      runtimeContext: { cwd: "/w", tokenBudget: 9, llm: { complete: async () => ({ text: "" }) }, rewriteTranscriptEntries: async () => ({}) },
    });
    assert.equal(res.ingested, true);
    // ingest reads no runtimeContext (core.IngestParams): none is sent.
    assert.deepEqual(res.echo, {
      sessionId: "s",
      message: { role: "user", content: "<b>é</b>", extra: { kept: [1, 2] } },
    });
    assert.deepEqual(res.hostCallbacks, []);

    const asm = await engine.assemble({
      sessionId: "s",
      messages: [],
      availableTools: new Set(["lcm_grep", "read"]),
      runtimeContext: { cwd: "/w", tokenBudget: 9, llm: { complete: async () => ({ text: "" }) }, rewriteTranscriptEntries: async () => ({}) },
    });
    assert.deepEqual(asm.availableTools, ["lcm_grep", "read"]);
    assert.deepEqual(asm.hostCallbacks.sort(), ["llm.complete", "rewriteTranscriptEntries"]);
  } finally {
    await engine.dispose();
  }
});

test("toWire leaves plain params alone", () => {
  assert.deepEqual(toWire({ sessionId: "a", tokenBudget: 5 }), { wire: { sessionId: "a", tokenBudget: 5 }, hostCallbacks: [] });
  assert.deepEqual(toWire({ sessionId: "a", tokenBudget: 5 }, "assemble"), { wire: { sessionId: "a", tokenBudget: 5 }, hostCallbacks: [] });
  assert.deepEqual(toWire(undefined), { wire: null, hostCallbacks: [] });
});

test("llm.complete is called back with OpenClaw's shape and its answer reaches the engine", async () => {
  const engine = fakeEngine();
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
  const engine = fakeEngine();
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
  const engine = fakeEngine();
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
  const engine = fakeEngine();
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
  const engine = fakeEngine();
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
  const engine = fakeEngine();
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
  const engine = fakeEngine();
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
  const errors = [];
  const engine = fakeEngine({}, { info() {}, warn() {}, debug() {}, error: (m) => errors.push(m) });
  try {
    await engine.ingest({ sessionId: "s", message: { role: "user", content: "x" } });
    const pid = engine.lossless.pid;
    await assert.rejects(engine.assemble({ sessionId: "s", prompt: "crash", messages: [] }), {
      name: "LosslessBridgeCrashError",
      message: /exited \(code 3/,
    });
    const res = await engine.assemble({ sessionId: "s", messages: [{ role: "user", content: "again" }] });
    assert.equal(res.messages[0].content, "again");
    assert.notEqual(engine.lossless.pid, pid);
    assert.equal(engine.lossless.restarts, 1);

    // Killed while idle: the crash is logged and the next call is served by
    // the restarted process.
    const idlePid = engine.lossless.pid;
    errors.length = 0;
    process.kill(idlePid, "SIGKILL");
    await new Promise((r) => setTimeout(r, 200));
    const ok = await engine.ingest({ sessionId: "s", message: { role: "user", content: "x" } });
    assert.equal(ok.ingested, true);
    assert.notEqual(engine.lossless.pid, idlePid);
    assert.equal(engine.lossless.restarts, 2);
    assert.ok(errors.some((m) => /signal SIGKILL.*while idle/.test(m)), `logged: ${errors}`);
  } finally {
    await engine.dispose();
  }
});

test("past maxRestarts a minute the process is not restarted at once, but the next call starts it", async () => {
  const engine = fakeEngine({ maxRestarts: 0 });
  await engine.ingest({ sessionId: "s", message: { role: "user", content: "x" } });
  const pid = engine.lossless.pid;
  process.kill(pid, "SIGKILL");
  await new Promise((r) => setTimeout(r, 200));
  assert.equal(engine.lossless.pid, undefined, "not restarted");
  const ok = await engine.ingest({ sessionId: "s", message: { role: "user", content: "x" } });
  assert.equal(ok.ingested, true);
  assert.notEqual(engine.lossless.pid, pid);
});

test("a missing binary makes the first call reject (the factory itself starts nothing)", async () => {
  const engine = fakeEngine({ command: "/nonexistent/lossless-binary" });
  await assert.rejects(engine.assemble({ sessionId: "s", messages: [] }), { name: "LosslessBridgeCrashError", message: /cannot start/ });
  await assert.rejects(engine.bootstrap({ sessionId: "s", sessionKey: "agent:main:main" }), /cannot start/);
});

test("toLlmCompleteParams keeps extra fields and maps roles", () => {
  const p = toLlmCompleteParams({ system: "s", model: "m", messages: [{ role: "compactionSummary", summary: "sum" }] });
  assert.deepEqual(p, { model: "m", purpose: "lossless context engine", signal: undefined, systemPrompt: "s", messages: [{ role: "user", content: "sum" }] });
});

test("afterTurn sends the whole view, or only the new messages when the engine says it reads only those", async () => {
  const view = [1, 2, 3, 4, 5].map((i) => ({ role: "user", content: `m${i}` }));
  const full = fakeEngine();
  try {
    assert.equal(await full.afterTurn({ sessionId: "s", sessionFile: "/f", messages: view, prePromptMessageCount: 3 }), undefined);
    const got = await full.lossless.client.request("lastAfterTurn", {});
    assert.equal(got.messages.length, 5);
    assert.equal(got.prePromptMessageCount, 3);
  } finally {
    await full.dispose();
  }
  const trimmed = fakeEngine({ args: [fakeServer, "--trim"] });
  try {
    await trimmed.afterTurn({ sessionId: "s", sessionFile: "/f", messages: view, prePromptMessageCount: 3 });
    const got = await trimmed.lossless.client.request("lastAfterTurn", {});
    assert.deepEqual(got.messages, view.slice(3));
    assert.equal(got.prePromptMessageCount, 0);
  } finally {
    await trimmed.dispose();
  }
});

test("a process that never initializes is killed after startTimeoutMs and the call rejects", async () => {
  const engine = fakeEngine({ args: ["-e", "setInterval(() => {}, 1000)"], startTimeoutMs: 300 });
  await assert.rejects(engine.ingest({ sessionId: "s", message: { role: "user", content: "x" } }), /did not initialize within 300 ms/);
});

test("a host callback runs in the async context of the request it belongs to, not of the call that started the process", async () => {
  const { AsyncLocalStorage } = await import("node:async_hooks");
  const als = new AsyncLocalStorage();
  const engine = fakeEngine();
  try {
    // The first call, made in turn 1, starts the process: its stdout
    // handler carries turn 1's context from then on.
    await als.run({ turn: 1 }, () => engine.ingest({ sessionId: "s", message: { role: "user", content: "x" } }));
    let seen;
    await als.run({ turn: 2 }, () =>
      engine.assemble({
        sessionId: "s",
        prompt: "llm",
        messages: [],
        runtimeContext: {
          llm: {
            complete: async () => {
              seen = als.getStore();
              return { text: "ok" };
            },
          },
        },
      }),
    );
    assert.deepEqual(seen, { turn: 2 });
  } finally {
    await engine.dispose();
  }
});

test("two copies of the engine module share one process per store", async () => {
  const a = await import("../lib/engine.js?copy=a");
  const b = await import("../lib/engine.js?copy=b");
  assert.notEqual(a.sharedClient, b.sharedClient);
  const cfg = { storeDir: "/nowhere/shared-copies", bridge: { command: process.execPath, args: [fakeServer] } };
  assert.equal(a.sharedClient(cfg), b.sharedClient(cfg));
});

test("uiAddr adds --ui to the engine command, stays out of the engine config, and the explorer's URL is logged", async () => {
  const infos = [];
  const logger = { info: (m) => infos.push(m), warn() {}, error() {}, debug() {} };
  let factory;
  plugin.register({
    pluginConfig: { storeDir: `/nowhere/${++stores}`, uiAddr: "127.0.0.1:4567", bridge: { command: process.execPath, args: [fakeServer] } },
    logger,
    registerContextEngine: (id, f) => (factory = f),
    registerTool() {},
  });
  const engine = factory({});
  try {
    const { client } = engine.lossless;
    assert.deepEqual(client.args, [fakeServer, "--ui", "127.0.0.1:4567"]);
    const init = await client.start();
    assert.equal(init.echo.config.uiAddr, undefined, "uiAddr is the plugin's, not the engine's");
    assert.equal(init.echo.config.storeDir, `/nowhere/${stores}`);
    await engine.ingest({ sessionId: "s", message: { role: "user", content: "x" } });
    for (let i = 0; i < 100 && !engine.lossless.uiUrl; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(engine.lossless.uiUrl, "http://127.0.0.1:4567/?token=f00d");
    assert.ok(infos.some((m) => m.includes("memory explorer (lossless ui) at http://127.0.0.1:4567/?token=f00d")), infos.join("\n"));
  } finally {
    await engine.dispose();
  }
  // Without uiAddr: the explorer on a free loopback port (the Memory tab proxies it).
  const plain = (await import("../lib/engine.js")).sharedClient({ storeDir: "/nowhere/plain-ui", bridge: { command: "lossless" } });
  assert.deepEqual(plain.args, ["serve", "--stdio", "--ui", "127.0.0.1:0"]);
});
