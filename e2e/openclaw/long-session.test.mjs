// Issue 26, "Done when" 5: a long session under real pressure, as a new user
// would run it. The plugin installed by the README's command with its
// default config, OpenClaw's default tool settings (no `tools` section:
// tool search on, so the lcm tools are deferred behind tool_search), a real
// `openclaw gateway run` and `openclaw agent` turns through it, and the fake
// model enforcing the window (400 context_length_exceeded above it, by its
// own estimate: characters of messages + tools / 4).
//
// 24K window: 42 turns of 3-8 KB notes, short questions, a `read` of a
// 6-11 KB workspace file every 5th turn, one lcm_expand of a summary through
// the runtime's tool path, and enough turns that maintain replaces old read
// results in OpenClaw's transcript. Each property is its own test.
// 16K window: the first request is already most of the window (system
// prompt + tool directory), the engine's budget a few hundred tokens; 15
// turns must all succeed inside the window.
//
// LOSSLESS_E2E_BUDGETS_OUT=FILE writes the budgets the engine received in
// the first 12 turns of each run (lossless/testdata/openclaw-budgets.json is
// such a file). LOSSLESS_E2E_LONG_TURNS / LOSSLESS_E2E_SMALL_TURNS shorten
// the runs while debugging.

import { describe, before, after, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { OpenClawEnv, skipReason, freePort, chatRequests, contentText, summaryIds, degradationLines, SUMMARY_OPEN } from "./harness.mjs";
import { startFakeModel } from "./fake-model.mjs";
import {
  planTurns,
  scriptModel,
  runTurns,
  attributedTraffic,
  budgetSequence,
  compactionFigures,
  sessionRequests,
  overflowFigures,
  requestTurn,
  compareStored,
  promptIndex,
} from "./long-session.mjs";

const skip = skipReason();

const LONG_TURNS = Number(process.env.LOSSLESS_E2E_LONG_TURNS || 42);
const SMALL_TURNS = Number(process.env.LOSSLESS_E2E_SMALL_TURNS || 15);
const BUDGET_TURNS = 12;

const BUDGETS = new Map(); // window -> calls, in the order the runs ran
function writeBudgets() {
  const out = process.env.LOSSLESS_E2E_BUDGETS_OUT;
  if (!out) return;
  const runs = [...BUDGETS].map(([window, calls]) => `    ${JSON.stringify(window)}: [\n${calls.map((c) => `      ${JSON.stringify(c)}`).join(",\n")}\n    ]`);
  const text =
    "{\n" +
    `  "source": "e2e/openclaw/long-session.test.mjs with LOSSLESS_E2E_BUDGETS_OUT: OpenClaw 2026.9.6, default tool settings; the assemble, commitTurn and compact calls of the first ${BUDGET_TURNS} turns of each run, in order (turn = 1-based turn of the session)",\n` +
    `  "runs": {\n${runs.join(",\n")}\n  }\n}\n`;
  fs.mkdirSync(path.dirname(path.resolve(out)), { recursive: true });
  fs.writeFileSync(out, text);
}

/** One session through a real gateway with default settings; returns everything the tests read. */
async function runScenario(S, { name, window, plan, sessionKey }) {
  const env = (S.env = new OpenClawEnv({ name }));
  const fake = (S.fake = await startFakeModel({ logFile: path.join(env.root, "model-requests.jsonl"), contextLimitTokens: window }));
  Object.assign(S, { state: {}, errors: [] });
  // OpenClaw's defaults: no `tools` section, and the workspace's bootstrap
  // files (AGENTS.md, SOUL.md, ...) in the system prompt, as a new user has them.
  const cfg = env.baseConfig({ fake, contextWindow: window, gatewayPort: await freePort(), defaultTools: true });
  delete cfg.agents.defaults.skipBootstrap;
  env.writeConfig(cfg);
  S.install = await env.install();
  if (S.install.code !== 0) throw new Error(`plugin install failed (${S.install.code}):\n${S.install.stdout}\n${S.install.stderr}`);
  env.selectEngine("lossless", env.engineConfig()); // the default plugin config (+ the store dir and the recording bridge)
  for (const t of plan) if (t.fileText) fs.writeFileSync(path.join(env.workspace, t.file), t.fileText);
  scriptModel(fake, { plan, window, workspace: env.workspace, state: S.state });
  const started = Date.now();
  await env.startGateway();
  S.turns = await runTurns(env, fake, {
    plan,
    sessionKey,
    state: S.state,
    onTurn: (r) => process.stderr.write(`long-session ${name}: turn ${r.i} (${r.kind}) ${r.turn.ms} ms${r.failure ? ` FAILED: ${r.failure}` : ""}\n`),
  });
  await env.stopGateway();
  S.wallMs = Date.now() - started;
  S.transcript = await env.transcript(sessionKey);
  S.requests = chatRequests(fake);
  S.sessionRequests = sessionRequests(fake, S.turns);
  const { calls, callbacks } = attributedTraffic(env, S.turns);
  S.calls = calls;
  S.callbacks = callbacks;
  S.compaction = compactionFigures(env, calls);
  S.overflow = overflowFigures(S.requests, window);
  S.degradation = degradationLines(env.gatewayOutput());
  S.failed = S.turns.filter((t) => t.failure);
  S.budgets = budgetSequence(calls, S.turns, BUDGET_TURNS);
  try {
    S.export = S.transcript.sessionId ? env.exportSession(S.transcript.sessionId) : null;
  } catch (err) {
    S.errors.push(String(err.message));
  }
  const figures = {
    run: name,
    window,
    turns: S.turns.length,
    failedTurns: S.failed.map((t) => `${t.i} (${t.kind}): ${t.failure}`),
    wallSeconds: Math.round(S.wallMs / 1000),
    ...S.overflow,
    ...S.compaction,
    ownSummaryIdsAssembled: S.compaction.ownSummaryIdsAssembled.length,
    summaryIdsBeforeAnyCompact: S.compaction.summaryIdsBeforeAnyCompact.length,
    rewrites: S.callbacks.filter((c) => c.method === "host/rewriteTranscriptEntries").map((c) => ({ turn: S.turns[c.turn]?.i, error: c.error?.message ?? null })),
    degradation: S.degradation.length,
    expand: { id: S.state.expandId ?? null, path: S.state.expandPath ?? null, callId: S.state.expandCallId ?? null },
  };
  S.figures = figures;
  fs.writeFileSync(path.join(env.root, "figures.json"), JSON.stringify(figures, null, 2) + "\n");
  process.stderr.write(`long-session ${name}: ${JSON.stringify(figures)}\n`);
  return S;
}

/** The assemble calls of turn k, in brief: what to look at when a request lost its summaries. */
function assemblesOfTurn(S, k) {
  const calls = S.calls.filter((c) => c.turn === k && c.method === "assemble");
  return calls
    .map((c) => {
      const msgs = c.result?.messages ?? [];
      const sums = msgs.filter((m) => m.role === "user" && contentText(m.content).startsWith(SUMMARY_OPEN)).length;
      return `[budget ${c.params?.tokenBudget}: ${msgs.length} messages, ${sums} summaries, ~${c.result?.estimatedTokens} tokens${c.result?.cut ? `, cut: ${c.result.cut.reason}` : ""}${c.error ? `, error: ${c.error.message}` : ""}]`;
    })
    .join(" ");
}

const problemsOfTurns = (S) => S.failed.map((t) => `turn ${t.i} (${t.kind}) failed: ${t.failure}`);

/** Fails with a count and the first few items when `list` is not empty. */
function none(list, what) {
  if (list.length === 0) return;
  const shown = list.slice(0, 6).map((x) => `  - ${x}`);
  if (list.length > 6) shown.push(`  - … and ${list.length - 6} more`);
  assert.fail(`${what}: ${list.length}\n${shown.join("\n")}`);
}

describe(`long session in a 24K window, default settings (${LONG_TURNS} turns)`, { skip }, () => {
  const WINDOW = 24_000;
  const plan = planTurns({ turns: LONG_TURNS, expandAt: LONG_TURNS - 6, tag: "w24" });
  const KEY = "agent:main:long-24k";
  const S = {}; // filled by runScenario (env and fake first, so after() cleans up even when the run throws)

  before(
    async () => {
      await runScenario(S, { name: "long24k", window: WINDOW, plan, sessionKey: KEY });
      BUDGETS.set(String(WINDOW), S.budgets);
      writeBudgets();
    },
    { timeout: 12 * 60_000 },
  );

  after(async () => {
    await S.fake?.close();
    await S.env?.cleanup();
  });

  test("0. every turn answers; OpenClaw never degrades or quarantines the engine", () => {
    none([...problemsOfTurns(S), ...S.degradation], `failed turns (of ${S.turns.length}) and degradation lines`);
  });

  test("1. the model server never answers a context overflow", () => {
    const o = S.requests.filter((r) => r.response?.kind === "overflow");
    none(
      o.map((r) => `request #${r.seq} (~${r.approxTokens} tokens, turn ${S.turns[requestTurn(S.turns, r)]?.i ?? "?"})`),
      `overflow answers (of ${S.requests.length} requests)`,
    );
  });

  test("2. every model request fits the window, by the model server's own estimate", () => {
    assert.ok(S.requests.length > 0, "no model request");
    none(S.overflow.overSeqs, `requests over the ${WINDOW}-token window (largest ~${S.overflow.largest} tokens, request #${S.overflow.largestSeq}; ${S.requests.length} requests)`);
  });

  test("3. the engine compacts on its own: summaries not made by OpenClaw's compact calls", () => {
    const c = S.compaction;
    assert.ok(c.storeSummaries != null, `lossless stats gave no summary count: ${c.storeError}`);
    assert.ok(
      c.summariesByEngine > 0,
      `the store holds ${c.storeSummaries} summaries, ${c.summariesByCompact} of them made by ${c.compactCalls} compact calls (${c.compactCompacted} compacted, ${c.compactNothing} "nothing to compact": ${JSON.stringify(c.compactReasons)}): none made by the engine's own compaction`,
    );
    assert.ok(c.ownSummaryIdsAssembled.length > 0, "no summary made by the engine's own compaction was ever returned by assemble");
  });

  test("4. once a summary reached the model, every later request of the session holds one; the engine's own summaries reach the model", () => {
    // The session's own requests: their prompt names one of its turns (not a side run of OpenClaw's).
    const reqs = S.sessionRequests.filter((r) => requestTurn(S.turns, r) >= 0 && promptIndex(r.body?.messages ?? []) >= 0);
    const first = reqs.findIndex((r) => summaryIds(r).length > 0);
    assert.ok(first >= 0, `no request of the session held a ${SUMMARY_OPEN} block`);
    const lost = reqs.slice(first).filter((r) => summaryIds(r).length === 0);
    none(
      lost.map((r) => `request #${r.seq} (turn ${S.turns[requestTurn(S.turns, r)]?.i}); the turn's assembles: ${assemblesOfTurn(S, requestTurn(S.turns, r))}`),
      `requests without a summary after the first one that held one (#${reqs[first].seq})`,
    );
    const own = new Set(S.compaction.ownSummaryIdsAssembled);
    const held = reqs.filter((r) => summaryIds(r).some((id) => own.has(id)));
    assert.ok(held.length > 0, `no request held a summary of the engine's own compaction (${own.size} such summaries assembled)`);
  });

  test("5. lcm_expand through the runtime's tool path returns raw stored message text", () => {
    const k = S.turns.findIndex((t) => t.kind === "expand");
    assert.ok(k >= 0, "the plan has no expand turn");
    assert.ok(S.state.expandId, "no summary id had reached the model before the expand turn: nothing to expand");
    // The turn's agent requests: not the summarization calls (no tools) the
    // engine makes with OpenClaw's model in the maintain after the turn.
    const all = S.requests.filter((r) => requestTurn(S.turns, r) === k && r.body?.tools?.length > 0);
    const reqs = all.filter((r) => r.response?.kind !== "overflow");
    const last = reqs.at(-1);
    assert.ok(last, `no model request of the expand turn (turn ${S.turns[k].i}) was answered: ${all.length} request(s), all overflow answers (${S.turns[k].failure ?? "the turn did not fail"})`);
    const msgs = last.body?.messages ?? [];
    const u = promptIndex(msgs);
    const toolCalls = msgs.slice(u + 1).filter((m) => m.role === "assistant").flatMap((m) => m.tool_calls ?? []).map((c) => `${c.function?.name}(${c.function?.arguments?.slice(0, 120)})`);
    const results = msgs.slice(u + 1).filter((m) => m.role === "tool").map((m) => contentText(m.content));
    const expandResult = results.at(-1) ?? "";
    assert.ok(
      toolCalls.some((c) => c.startsWith("lcm_expand(") || (c.startsWith("tool_call(") && c.includes("lcm_expand"))),
      `lcm_expand was not called (path: ${S.state.expandPath}; calls: ${JSON.stringify(toolCalls)})`,
    );
    const raw = S.turns.filter((t, j) => j < k && t.kind === "note").map((t) => t.message.slice(0, 160));
    assert.ok(
      raw.some((s) => expandResult.includes(s)),
      `the lcm_expand result (path ${S.state.expandPath}, id ${S.state.expandId}) holds no raw note text: ${expandResult.slice(0, 600)}`,
    );
    assert.ok(!/not found|unknown tool|error/i.test(expandResult.slice(0, 200)), `lcm_expand failed: ${expandResult.slice(0, 400)}`);
  });

  test("6. every message of every turn is stored byte for byte (JSON-equal to OpenClaw's SQLite transcript)", () => {
    assert.ok(S.transcript.sessionId, "no transcript in OpenClaw's store");
    assert.ok(S.export, `lossless export failed: ${S.errors.join("; ")}`);
    const problems = compareStored(S.transcript, S.export);
    const users = new Set(S.export.messages.filter((m) => m.role === "user").map((m) => contentText(m.content)));
    for (const t of S.turns) if (![...users].some((u) => u.includes(t.message))) problems.push(`turn ${t.i}: its user message is not in the store`);
    none(problems, "differences between OpenClaw's transcript and the store");
  });

  test("7. a turn whose maintain rewrites OpenClaw's transcript succeeds, and its user message is stored", () => {
    const rewrites = S.callbacks.filter((c) => c.method === "host/rewriteTranscriptEntries");
    assert.ok(rewrites.length > 0, `maintain never asked for a transcript rewrite (maintain answers: ${JSON.stringify(S.calls.filter((c) => c.method === "maintain").map((c) => c.result?.reason ?? c.error?.message).slice(-3))})`);
    const rewritten = S.transcript.messages.filter((m) => JSON.stringify(m).includes("lcm-large:"));
    assert.ok(rewritten.length > 0, `no tool result was replaced in OpenClaw's transcript (rewrite answers: ${JSON.stringify(rewrites.map((c) => c.error ?? c.result).slice(-3)).slice(0, 800)})`);
    const stored = new Set((S.export?.messages ?? []).filter((m) => m.role === "user").map((m) => contentText(m.content)));
    const problems = [];
    for (const k of new Set(rewrites.map((c) => c.turn))) {
      const t = S.turns[k];
      if (!t) continue;
      if (t.failure) problems.push(`turn ${t.i} (with a maintain rewrite) failed: ${t.failure}`);
      const committed = S.calls.some(
        (c) => c.turn === k && c.method === "commitTurn" && c.result && !c.error && (c.params?.messages ?? []).some((m) => m.role === "user" && contentText(m.content).includes(t.message)),
      );
      if (!committed) problems.push(`turn ${t.i} (with a maintain rewrite): no successful commitTurn of its user message during the turn`);
      if (![...stored].some((u) => u.includes(t.message))) problems.push(`turn ${t.i} (with a maintain rewrite): its user message is not in the store`);
    }
    none(problems, `problems of the turns with a maintain rewrite (${rewrites.length} rewrite request(s))`);
  });
});

describe(`long session in a 16K window, default settings (${SMALL_TURNS} turns)`, { skip }, () => {
  const WINDOW = 16_000;
  // Turns that fit on their own beside OpenClaw's ~12.5K of system prompt and
  // tool directory: notes of 2-6 KB, a 3 KB read every 5th turn.
  const plan = planTurns({ turns: SMALL_TURNS, noteMin: 2000, noteMax: 6000, readSizes: [3_000, 3_400], tag: "w16" });
  const KEY = "agent:main:long-16k";
  const S = {}; // filled by runScenario (env and fake first, so after() cleans up even when the run throws)

  before(
    async () => {
      await runScenario(S, { name: "long16k", window: WINDOW, plan, sessionKey: KEY });
      BUDGETS.set(String(WINDOW), S.budgets);
      writeBudgets();
    },
    { timeout: 8 * 60_000 },
  );

  after(async () => {
    await S.fake?.close();
    await S.env?.cleanup();
  });

  test("no model request over the window (no overflow answer)", () => {
    none(S.overflow.overSeqs, `requests over the ${WINDOW}-token window (${S.overflow.overflows} overflow answers of ${S.requests.length} requests; largest ~${S.overflow.largest} tokens)`);
  });

  test("no turn fails because of the engine: every turn answers, no degradation or quarantine", () => {
    none([...problemsOfTurns(S), ...S.degradation], `failed turns (of ${S.turns.length}) and degradation lines`);
  });
});
