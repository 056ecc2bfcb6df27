// What reaches the engine process: only the fields the Go engine reads.
// The field lists are checked against the Go param types (core/types.go),
// and a secret placed anywhere else in OpenClaw's params (the provider
// apiKey in runtimeContext.config, skills snapshots, unknown fields at any
// level) is shown never to reach the child's stdin.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

import { createLosslessEngine, shutdownEngines } from "../lib/engine.js";
import { PARAM_FIELDS, RUNTIME_CONTEXT_FIELDS, toWire } from "../lib/wire.js";

const fakeServer = fileURLToPath(new URL("../fixtures/fake-server.mjs", import.meta.url));
const typesGo = fileURLToPath(new URL("../../core/types.go", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "lossless-wire-"));

after(async () => {
  await shutdownEngines();
  rmSync(dir, { recursive: true, force: true });
});

// The JSON field names of a Go struct type in src (embedded structs are
// not followed; none of the param types embeds one).
function goJsonFields(src, typeName) {
  const m = new RegExp(`^type ${typeName} struct \\{\\n([\\s\\S]*?)^\\}`, "m").exec(src);
  assert.ok(m, `type ${typeName} not found in core/types.go`);
  return [...m[1].matchAll(/`json:"([^",]+)/g)].map((x) => x[1]).filter((n) => n !== "-");
}

test("the forwarded fields are exactly the JSON fields of the Go param types", { skip: existsSync(typesGo) ? false : "core/types.go is not beside the plugin" }, () => {
  const src = readFileSync(typesGo, "utf8");
  const types = {
    bootstrap: "BootstrapParams",
    maintain: "MaintainParams",
    ingest: "IngestParams",
    ingestBatch: "IngestBatchParams",
    afterTurn: "AfterTurnParams",
    assemble: "AssembleParams",
    compact: "CompactParams",
    commitTurn: "CommitTurnParams",
    prepareSubagentSpawn: "SubagentSpawnParams",
    onSubagentEnded: "SubagentEndedParams",
  };
  assert.deepEqual(Object.keys(PARAM_FIELDS).sort(), Object.keys(types).sort());
  for (const [method, type] of Object.entries(types)) {
    assert.deepEqual([...PARAM_FIELDS[method]].sort(), goJsonFields(src, type).sort(), `${method} (core.${type})`);
  }
});

const SECRET = "sk-SECRET-d41d8cd98f00";

// OpenClaw-shaped params with the secret in every place that is not read.
function secretParams(extra = {}) {
  return {
    sessionId: "sess-1",
    sessionKey: "agent:main:main",
    sessionFile: "agent:main:main",
    sessionTarget: { agentId: "main", sessionId: "sess-1", sessionKey: "agent:main:main", storePath: "/state/agents/main/sessions.sqlite", secretField: SECRET },
    runtimeSettings: {
      schemaVersion: 1,
      runtime: { host: "openclaw", mode: "normal", harnessId: null, runtimeId: null, token: SECRET },
      model: { requested: "m", resolved: "m", provider: "p", family: null, apiKey: SECRET },
      extra: { apiKey: SECRET },
    },
    runtimeContext: {
      cwd: `/home/${SECRET}`,
      tokenBudget: 1000,
      currentTokenCount: 10,
      transcriptStorage: { kind: "sqlite", path: SECRET },
      promptCache: { retention: "short", lastCallUsage: { input: 1 }, leaked: SECRET },
      config: { models: { providers: { fake: { baseUrl: "http://127.0.0.1:1", apiKey: SECRET } } } },
      skillsSnapshot: { prompt: SECRET, skills: [{ name: "s", body: SECRET }] },
      agentHarnessId: SECRET,
      llm: { complete: async () => ({ text: SECRET }) },
      rewriteTranscriptEntries: async () => ({ changed: false, bytesFreed: 0, rewrittenEntries: 0 }),
    },
    config: { apiKey: SECRET },
    skillsSnapshot: { prompt: SECRET },
    unknownTopLevel: SECRET,
    ...extra,
  };
}

test("no secret outside the read fields reaches the child's stdin, on any method", async () => {
  const log = join(dir, "stdin.jsonl");
  const engine = createLosslessEngine({
    pluginConfig: { storeDir: join(dir, "store"), bridge: { command: process.execPath, args: [fakeServer, "--log", log] } },
  });
  const anchor = { agentId: "main", sessionId: "sess-1", sessionKey: "agent:main:main", storePath: "/s", generation: "g", entryId: "e1", rawSeq: 1, effectiveParentId: null, activeMessagePosition: 1, secret: SECRET };
  const msgs = [{ role: "user", content: "hello", timestamp: 1 }];
  await engine.bootstrap(secretParams());
  await engine.maintain(secretParams({ reason: "echo" }));
  await engine.ingest(secretParams({ message: msgs[0] }));
  await engine.ingestBatch(secretParams({ messages: msgs }));
  await engine.afterTurn(secretParams({ messages: msgs, prePromptMessageCount: 0 }));
  await engine.assemble(secretParams({ messages: msgs, tokenBudget: 100, prompt: "hi", availableTools: new Set(["read"]), model: "m" }));
  const compacted = await engine.compact(secretParams({ customInstructions: "echo", force: true, tokenBudget: 100, agentId: "main" }));
  await engine.commitTurn(
    secretParams({ advancementKey: "adv", admission: { ...anchor, logicalTurnId: "t1", role: "user" }, terminal: anchor, messages: msgs, isHeartbeat: false }),
  );
  await engine.onSubagentEnded(secretParams({ childSessionKey: "c", reason: "completed" }));

  const written = readFileSync(log, "utf8");
  assert.ok(written.includes('"method":"commitTurn"'), "the calls were written");
  assert.equal(written.includes(SECRET), false, `the secret reached the child:\n${written.split("\n").filter((l) => l.includes(SECRET)).join("\n")}`);
  // (initialize carries the plugin's own engine config; no call carries
  // OpenClaw's.)
  const calls = written.split("\n").filter((l) => l && !l.includes('"method":"initialize"'));
  assert.equal(calls.some((l) => l.includes('"config"')), false);
  // initialize tells the engine its host: OpenClaw, whose model is then the
  // default summarizer.
  const init = written.split("\n").filter((l) => l.includes('"method":"initialize"')).map((l) => JSON.parse(l));
  assert.ok(init.length > 0 && init.every((m) => m.params.host === "openclaw"), `initialize without host "openclaw": ${JSON.stringify(init)}`);
  assert.equal(written.includes("skillsSnapshot"), false);

  // What compact sent, exactly.
  assert.deepEqual(compacted.echo, {
    sessionId: "sess-1",
    sessionKey: "agent:main:main",
    agentId: "main",
    sessionTarget: { agentId: "main", sessionId: "sess-1", sessionKey: "agent:main:main", storePath: "/state/agents/main/sessions.sqlite" },
    sessionFile: "agent:main:main",
    tokenBudget: 100,
    force: true,
    customInstructions: "echo",
    runtimeSettings: {
      schemaVersion: 1,
      runtime: { host: "openclaw", mode: "normal", harnessId: null, runtimeId: null },
      model: { requested: "m", resolved: "m", provider: "p", family: null },
    },
    runtimeContext: {
      tokenBudget: 1000,
      currentTokenCount: 10,
      transcriptStorage: { kind: "sqlite" },
      promptCache: { retention: "short", lastCallUsage: { input: 1 } },
    },
  });
  assert.deepEqual(compacted.hostCallbacks.sort(), ["llm.complete", "rewriteTranscriptEntries"]);
});

test("runtimeContext: only the listed keys, functions as host callbacks", () => {
  const rc = {};
  for (const k of RUNTIME_CONTEXT_FIELDS) rc[k] = k === "sessionTarget" ? { sessionId: "s" } : 1;
  rc.config = { apiKey: SECRET };
  rc.llm = { complete: () => {} };
  const { wire, hostCallbacks } = toWire({ sessionId: "s", runtimeContext: rc }, "maintain");
  assert.deepEqual(Object.keys(wire.runtimeContext).sort(), [...RUNTIME_CONTEXT_FIELDS].sort());
  assert.deepEqual(hostCallbacks, ["llm.complete"]);
  // A method whose Go type has no runtimeContext gets none.
  assert.deepEqual(toWire({ sessionId: "s", runtimeContext: rc, message: { role: "user", content: "x" } }, "ingest").wire, {
    sessionId: "s",
    message: { role: "user", content: "x" },
  });
});

test("messages pass verbatim, unknown fields included", () => {
  const m = { role: "assistant", content: [{ type: "text", text: "x", extra: { deep: [1, { y: 2 }] } }], "x-unknown": { kept: true }, usage: { cost: { total: 0 } } };
  assert.deepEqual(toWire({ sessionId: "s", messages: [m] }, "ingestBatch").wire.messages, [m]);
});
