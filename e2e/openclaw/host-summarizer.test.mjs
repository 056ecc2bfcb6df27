// End to end with `summarizer: {kind: "host"}`: the engine's compaction
// summaries come from OpenClaw's own model for the session
// (runtimeContext.llm.complete, relayed by the plugin), which here is the
// fake model server. A long session through a real gateway; the server
// answers every request without tools (a completion, not an agent turn) with
// a recognisable summary, which must then reach a later agent request inside
// an <lcm_summary> block.

import { describe, before, after, test } from "node:test";
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

describe("OpenClaw gateway + lossless plugin with the host's model as summarizer", { skip }, () => {
  let env;
  let fake;
  const S = { errors: [] };

  before(
    async () => {
      env = new OpenClawEnv({ name: "host-summarizer" });
      fake = await startFakeModel({ logFile: path.join(env.root, "model-requests.jsonl"), contextLimitTokens: CONTEXT_WINDOW });
      fake.setRules([{ when: isCompletion, response: (body, n) => ({ text: `${SUMMARY_TAG}-${n}: notes about ledgers, turbines and freight.` }) }]);
      env.writeConfig(env.baseConfig({ fake, contextWindow: CONTEXT_WINDOW, gatewayPort: await freePort() }));
      S.install = await env.install();
      if (S.install.code !== 0) throw new Error(`plugin install failed (${S.install.code}):\n${S.install.stdout}\n${S.install.stderr}`);
      env.selectEngine(
        "lossless",
        env.engineConfig({ summarizer: { kind: "host" }, freshTailMessages: 4, leafChunkTokens: 4000, leafTargetTokens: 400 }),
      );
      await env.startGateway();
      for (let i = 1; i <= TURNS; i++) {
        const t = await env.turn({ sessionKey: KEY, message: `${marker(i)}: a long note for the record. ${filler(10_000, 100 + i)}` });
        if (t.code !== 0) S.errors.push(`turn ${i} exited ${t.code}: ${t.stderr.slice(-1500)}`);
      }
      const t = await env.turn({ sessionKey: KEY, message: "That is all; a short closing note. (HOSTSUM-LAST)" });
      if (t.code !== 0) S.errors.push(`last turn exited ${t.code}: ${t.stderr.slice(-1500)}`);
      await env.stopGateway();
      S.requests = chatRequests(fake);
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

  test("h. compaction asks the host's model for a summary (a summarization request reaches the model server)", () => {
    const completions = S.requests.filter((r) => isCompletion(r.body));
    const summarize = completions.filter((r) => /summar/i.test(JSON.stringify(r.body.messages ?? [])) && /HOSTSUM-TURN-\d\d/.test(JSON.stringify(r.body.messages ?? [])));
    const callbacks = env.children().flatMap((c) => c.hostCalls).filter((h) => /llm/i.test(h.method));
    assert.ok(
      summarize.length > 0,
      `no summarization request reached the model server (requests without tools: ${completions.length}; llm callbacks from the engine: ${callbacks.length}; compact calls: ${env.calls("compact").length})`,
    );
  });

  test("h. the host model's summary reaches a later request inside an <lcm_summary> block", () => {
    const later = S.requests.filter((r) => !isCompletion(r.body) && summaryIds(r).length > 0);
    assert.ok(later.length > 0, `no agent request held a ${SUMMARY_OPEN} block`);
    const blocks = later.flatMap((r) => (r.body.messages ?? []).map((m) => contentText(m.content)).filter((t) => t.includes(`${SUMMARY_OPEN} id=`)));
    assert.ok(
      blocks.some((t) => t.includes(SUMMARY_TAG)),
      `the <lcm_summary> blocks hold no text from the host model; the last one: ${blocks.at(-1)?.slice(0, 600)}`,
    );
  });

  test("h. no request overflowed the model's window", () => {
    assert.deepEqual(S.requests.filter((r) => r.response?.source === "auto-overflow").map((r) => r.seq), []);
  });
});
