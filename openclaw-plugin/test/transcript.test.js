// The transcript read relayed for the engine: bootstrap, maintain and
// compact calls that name a session offer "readTranscript"; the server's
// host/readTranscript requests are answered by OpenClaw's SDK read
// (readSessionTranscriptVisibleMessageDelta), its result passed as is.
// OpenClaw is not loaded here: a stand-in reader is injected.
import { test, after, afterEach } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";

import { createLosslessEngine, shutdownEngines } from "../lib/engine.js";
import { loadTranscriptReader, readParams, setTranscriptReaderLoader, transcriptTarget } from "../lib/transcript.js";

const fakeServer = fileURLToPath(new URL("../fixtures/fake-server.mjs", import.meta.url));

after(shutdownEngines);
afterEach(() => setTranscriptReaderLoader());

let stores = 0;
function engine() {
  return createLosslessEngine({ pluginConfig: { storeDir: `/nowhere/tr-${++stores}`, bridge: { command: process.execPath, args: [fakeServer] } } });
}

const target = { agentId: "main", sessionId: "sess-1", sessionKey: "agent:main:main", storePath: "/state/agents/main/agent/openclaw-agent.sqlite" };

// A transcript of 5 messages served 2 a page, with OpenClaw's result shape.
function fakeReader(calls) {
  const entries = [1, 2, 3, 4, 5].map((i) => ({
    entryId: `e${i}`,
    parentId: i === 1 ? null : `e${i - 1}`,
    seq: i,
    message: { role: i % 2 ? "user" : "assistant", content: [{ type: "text", text: `m${i}` }], timestamp: 1000 + i },
    role: i % 2 ? "user" : "assistant",
    createdAt: `2026-12-01T00:00:0${i}.000Z`,
  }));
  return async (p) => {
    calls.push(p);
    const from = p.cursor ? Number(p.cursor.slice(1)) : 0;
    const page = entries.slice(from, from + (p.maxMessages ?? 1000));
    const next = from + page.length;
    return { kind: "page", cursor: `c${next}`, hasMore: next < entries.length, entries: page };
  };
}

test("bootstrap reads the whole transcript through the relayed SDK read, paged", async () => {
  const calls = [];
  setTranscriptReaderLoader(async () => fakeReader(calls));
  const e = engine();
  const res = await e.bootstrap({ sessionId: "sess-1", sessionKey: "agent:main:main", sessionFile: "agent:main:main", sessionTarget: { ...target, threadId: "t" } });
  assert.ok(res.hostCallbacks.includes("readTranscript"));
  assert.equal(res.bootstrapped, true);
  assert.deepEqual(
    res.pages.map((p) => p.entries.map((x) => x.entryId)),
    [["e1", "e2"], ["e3", "e4"], ["e5"]],
  );
  // The SDK result reaches the engine as is.
  assert.deepEqual(res.pages[0].entries[0], {
    entryId: "e1",
    parentId: null,
    seq: 1,
    message: { role: "user", content: [{ type: "text", text: "m1" }], timestamp: 1001 },
    role: "user",
    createdAt: "2026-12-01T00:00:01.000Z",
  });
  // The SDK was called with the session's identity, the engine's cursor
  // (none on the first page) and page size.
  assert.deepEqual(calls, [
    { ...target, maxMessages: 2 },
    { ...target, cursor: "c2", maxMessages: 2 },
    { ...target, cursor: "c4", maxMessages: 2 },
  ]);
});

test("reset, missing and unavailable results pass through; a throwing read becomes an engine error", async () => {
  for (const result of [{ kind: "reset", cursor: "c0", reason: "generation_mismatch" }, { kind: "missing" }, { kind: "unavailable", reason: "projection_rebuilding" }]) {
    setTranscriptReaderLoader(async () => async () => result);
    const res = await engine().bootstrap({ sessionId: "sess-1", sessionKey: "agent:main:main", sessionTarget: target });
    assert.deepEqual(res.pages, [result]);
  }
  setTranscriptReaderLoader(async () => async () => {
    throw new Error("Transcript read cursor has crossed the current-turn admission fence");
  });
  await assert.rejects(engine().bootstrap({ sessionId: "sess-1", sessionKey: "agent:main:main", sessionTarget: target }), /readTranscript: .*admission fence/);
});

test("readTranscript is offered to bootstrap, maintain and compact with a session, and to nothing else", async () => {
  setTranscriptReaderLoader(async () => fakeReader([]));
  const e = engine();
  const m = await e.maintain({ sessionId: "sess-1", sessionKey: "agent:main:main", sessionTarget: target, reason: "echo" });
  assert.deepEqual(m.hostCallbacks, ["readTranscript"]);
  const c = await e.compact({ sessionId: "sess-1", sessionKey: "agent:main:main", sessionTarget: target, customInstructions: "echo" });
  assert.deepEqual(c.hostCallbacks, ["readTranscript"]);
  // sessionKey + sessionId without a sessionTarget are enough.
  const c2 = await e.compact({ sessionId: "sess-1", sessionKey: "agent:main:main", customInstructions: "echo" });
  assert.deepEqual(c2.hostCallbacks, ["readTranscript"]);
  // No session: nothing to read.
  const b = await e.bootstrap({ sessionId: "sess-1" });
  assert.deepEqual(b.hostCallbacks, []);
  const a = await e.assemble({ sessionId: "sess-1", sessionKey: "agent:main:main", messages: [] });
  assert.deepEqual(a.hostCallbacks, []);
  const ct = await e.commitTurn({ sessionId: "sess-1", sessionKey: "agent:main:main", sessionTarget: target, advancementKey: "a", messages: [] });
  assert.deepEqual(ct.hostCallbacks, []);
});

test("without OpenClaw's SDK the callback is not offered", async () => {
  // The default loader: outside OpenClaw the subpath does not resolve.
  assert.equal(await loadTranscriptReader(), null);
  const b = await engine().bootstrap({ sessionId: "sess-1", sessionKey: "agent:main:main", sessionTarget: target });
  assert.deepEqual(b.hostCallbacks, []);
  setTranscriptReaderLoader(async () => {
    throw new Error("no sdk");
  });
  const b2 = await engine().bootstrap({ sessionId: "sess-1", sessionKey: "agent:main:main", sessionTarget: target });
  assert.deepEqual(b2.hostCallbacks, []);
});

test("the read target and params", () => {
  assert.deepEqual(transcriptTarget({ sessionId: "s", sessionKey: "agent:ops:explicit:x" }), { sessionKey: "agent:ops:explicit:x", sessionId: "s", agentId: "ops" });
  assert.deepEqual(transcriptTarget({ sessionId: "s", sessionKey: "k", agentId: "a" }), { sessionKey: "k", sessionId: "s", agentId: "a" });
  assert.deepEqual(transcriptTarget({ sessionTarget: target }), target);
  assert.deepEqual(transcriptTarget({ sessionId: "s", runtimeContext: { sessionTarget: target } }), { ...target, sessionId: "s" });
  assert.equal(transcriptTarget({ sessionId: "s" }), null);
  assert.equal(transcriptTarget({ sessionKey: "k" }), null);
  assert.deepEqual(readParams(target, { cursor: null, maxMessages: 500, maxBytes: 1 << 20 }), { ...target, maxMessages: 500, maxBytes: 1 << 20 });
  assert.deepEqual(readParams(target, { cursor: "abc", maxMessages: 0 }), { ...target, cursor: "abc" });
  assert.deepEqual(readParams(target, undefined), target);
});
