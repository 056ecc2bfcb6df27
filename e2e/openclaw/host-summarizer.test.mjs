// End to end with the plugin's DEFAULT summarizer (no `summarizer` in the
// config): under OpenClaw the engine's compaction summaries come from
// OpenClaw's own model for the session (runtimeContext.llm.complete, relayed
// by the plugin), which here is the fake model server. A long session
// through a real gateway; the server answers every request without tools (a
// completion, not an agent turn) with a recognisable summary, which must
// then reach a later agent request inside an <lcm_summary> block.
//
// Then the same session with a tiny spend cap (`summarizer:
// {maxTokensPerHour: 1}`): no summarizer request reaches the model, the
// extractive summarizer writes the summaries, the engine says why, and every
// turn still succeeds.
//
// Only the DAG sizes are set (freshTailMessages, leafChunkTokens,
// leafTargetTokens) so that a few turns compact; the summarizer is left to
// its default.

import { describe, before, after, test } from "node:test";
import fs from "node:fs";
import assert from "node:assert/strict";
import path from "node:path";
import { OpenClawEnv, skipReason, freePort, chatRequests, contentText, summaryIds, degradationLines, SUMMARY_OPEN } from "./harness.mjs";
import { startFakeModel } from "./fake-model.mjs";
import { filler } from "./text.mjs";

const skip = skipReason();

const KEY = "agent:main:e2e-host-summary";
const CONTEXT_WINDOW = 24_000;
const TURNS = 8;
const marker = (i) => `HOSTSUM-TURN-${String(i).padStart(2, "0")}`;
const SUMMARY_TAG = "HOST-MODEL-SUMMARY";

const isCompletion = (body) => !(body?.tools?.length > 0);

/**
 * A summarization request answered as a model that summarizes does: the
 * notes' markers kept (the engine refuses a summary without the sources'
 * identifiers, or a canned one-liner, and writes the extractive one).
 */
const modelSummary = (body, n) => {
  const marks = [...new Set(JSON.stringify(body.messages ?? []).match(/HOSTSUM-(?:TURN-\d\d|LAST)/g) ?? [])];
  return (
    `${SUMMARY_TAG}-${n}: the user wrote long notes for the record, labelled ${marks.join(", ") || "(none)"}, ` +
    "about ledgers, turbines, freight and the schedule of the mill. Nothing was decided and nothing is pending."
  );
};
const SIZES = { freshTailMessages: 4, leafChunkTokens: 4000, leafTargetTokens: 400 };

/** The summarization requests the model server saw (the engine's prompt over the session's turns). */
const summarizerRequests = (requests) =>
  requests.filter((r) => isCompletion(r.body) && /summar/i.test(JSON.stringify(r.body.messages ?? [])) && /HOSTSUM-TURN-\d\d/.test(JSON.stringify(r.body.messages ?? [])));

/** Runs the long session on a gateway with the lossless plugin configured with engineExtra. */
async function runSession(name, engineExtra, S) {
  const env = new OpenClawEnv({ name });
  const fake = await startFakeModel({ logFile: path.join(env.root, "model-requests.jsonl"), contextLimitTokens: CONTEXT_WINDOW });
  fake.setRules([{ when: isCompletion, response: (body, n) => ({ text: modelSummary(body, n) }) }]);
  env.writeConfig(env.baseConfig({ fake, contextWindow: CONTEXT_WINDOW, gatewayPort: await freePort() }));
  S.install = await env.install();
  if (S.install.code !== 0) throw new Error(`plugin install failed (${S.install.code}):\n${S.install.stdout}\n${S.install.stderr}`);
  env.selectEngine("lossless", env.engineConfig({ ...SIZES, ...engineExtra }));
  await env.startGateway();
  for (let i = 1; i <= TURNS; i++) {
    const t = await env.turn({ sessionKey: KEY, message: `${marker(i)}: a long note for the record. ${filler(10_000, 100 + i)}` });
    if (t.code !== 0) S.errors.push(`turn ${i} exited ${t.code}: ${t.stderr.slice(-1500)}`);
  }
  const t = await env.turn({ sessionKey: KEY, message: "That is all; a short closing note. (HOSTSUM-LAST)" });
  if (t.code !== 0) S.errors.push(`last turn exited ${t.code}: ${t.stderr.slice(-1500)}`);
  await env.stopGateway();
  S.requests = chatRequests(fake);
  return { env, fake };
}

/** The text of the <lcm_summary> blocks of the agent requests. */
const summaryBlocks = (requests) =>
  requests
    .filter((r) => !isCompletion(r.body) && summaryIds(r).length > 0)
    .flatMap((r) => (r.body.messages ?? []).map((m) => contentText(m.content)).filter((t) => t.includes(`${SUMMARY_OPEN} id=`)));

describe("OpenClaw gateway + lossless plugin, default summarizer: the host's model", { skip }, () => {
  let env;
  let fake;
  const S = { errors: [] };

  before(
    async () => {
      ({ env, fake } = await runSession("host-summarizer", {}, S));
    },
    { timeout: 15 * 60_000 },
  );

  after(async () => {
    await fake?.close();
    await env?.cleanup();
  });

  test("every turn ran on lossless", () => {
    assert.deepEqual(S.errors, []);
    assert.deepEqual(degradationLines(env.gatewayOutput()), []);
    assert.equal(env.calls("commitTurn").filter((c) => c.result && !c.error).length, TURNS + 1, "one successful commitTurn per turn");
  });

  test("h. the plugin tells the engine its host is OpenClaw, and the config names no summarizer", () => {
    const inits = env.calls("initialize");
    assert.ok(inits.length > 0, "no initialize recorded");
    for (const c of inits) {
      assert.equal(c.params?.host, "openclaw", "initialize without host: openclaw");
      assert.equal(c.params?.config?.summarizer, undefined, "the config sets a summarizer: this test is about the default");
    }
  });

  test("h. compaction asks the host's model for a summary (a summarization request reaches the model server)", (t) => {
    const completions = S.requests.filter((r) => isCompletion(r.body));
    const summarize = summarizerRequests(S.requests);
    const callbacks = env.children().flatMap((c) => c.hostCalls).filter((h) => /llm/i.test(h.method));
    assert.ok(
      summarize.length > 0,
      `no summarization request reached the model server (requests without tools: ${completions.length}; llm callbacks from the engine: ${callbacks.length}; compact calls: ${env.calls("compact").length})`,
    );
    // What the default cost in this session: the host's own count of each call.
    const usage = callbacks.map((h) => h.result?.usage ?? {});
    const sum = (k) => usage.reduce((n, u) => n + (u[k] ?? 0), 0);
    t.diagnostic(
      `summarizer calls: ${callbacks.length} (model server saw ${summarize.length}); host-reported tokens: input ${sum("inputTokens")}, output ${sum("outputTokens")}; ` +
        `prompt chars ${summarize.reduce((n, r) => n + JSON.stringify(r.body.messages).length, 0)}; turns ${TURNS + 1}; compact calls ${env.calls("compact").length}`,
    );
  });

  test("h. the host model's summary reaches a later request inside an <lcm_summary> block", () => {
    const blocks = summaryBlocks(S.requests);
    assert.ok(blocks.length > 0, `no agent request held a ${SUMMARY_OPEN} block`);
    assert.ok(
      blocks.some((t) => t.includes(SUMMARY_TAG)),
      `the <lcm_summary> blocks hold no text from the host model; the last one: ${blocks.at(-1)?.slice(0, 600)}`,
    );
  });

  test("h. no request overflowed the model's window", () => {
    assert.deepEqual(S.requests.filter((r) => r.response?.source === "auto-overflow").map((r) => r.seq), []);
  });
});

describe("OpenClaw gateway + lossless plugin, default summarizer over a tiny spend cap: the extractive fallback", { skip }, () => {
  let env;
  let fake;
  const S = { errors: [] };

  before(
    async () => {
      ({ env, fake } = await runSession("host-summarizer-cap", { summarizer: { maxTokensPerHour: 1 } }, S));
    },
    { timeout: 15 * 60_000 },
  );

  after(async () => {
    await fake?.close();
    await env?.cleanup();
  });

  test("every turn ran on lossless", () => {
    assert.deepEqual(S.errors, []);
    assert.deepEqual(degradationLines(env.gatewayOutput()), []);
    assert.equal(env.calls("commitTurn").filter((c) => c.result && !c.error).length, TURNS + 1, "one successful commitTurn per turn");
  });

  test("c. no summarization request reaches the model: the cap refuses every one", () => {
    const callbacks = env.children().flatMap((c) => c.hostCalls).filter((h) => /llm/i.test(h.method));
    assert.deepEqual(summarizerRequests(S.requests).map((r) => r.seq), []);
    assert.equal(callbacks.length, 0, "the engine called llm.complete over the cap");
  });

  test("c. the session was compacted with the extractive summarizer, and its summaries reach later requests", () => {
    const blocks = summaryBlocks(S.requests);
    assert.ok(blocks.length > 0, `no agent request held a ${SUMMARY_OPEN} block: nothing was compacted`);
    assert.ok(!blocks.some((t) => t.includes(SUMMARY_TAG)), "a summary holds the host model's text over the cap");
  });

  test("c. the engine says why: the spend cap, in its log (relayed by the plugin)", () => {
    const stderr = env.children().map((c) => c.stderr).join("\n");
    assert.match(stderr, /spend cap reached.*maxTokensPerHour 1 /, `the engine's stderr does not name the cap:\n${stderr.slice(-2000)}`);
    const openclawLog = path.join(env.logDir, "openclaw.log");
    const logs = env.gatewayOutput() + (fs.existsSync(openclawLog) ? fs.readFileSync(openclawLog, "utf8") : "");
    assert.match(logs, /spend cap reached/, "the cap's warning did not reach OpenClaw's log");
  });
});
