// Issue 26, "Done when" 5, and issue 36, "Done when" 2: a long session
// under real pressure, as a new user would run it, in a 24K window (the
// other windows: long-session-16k/-32k/-128k.test.mjs; the suite, what every
// window asserts and the legacy run beside it: long-session-suite.mjs).
//
// 46 turns of 3-8 KB notes, short questions, a `read` of a 6-11 KB workspace
// file every 5th turn, one lcm_expand of a summary through the runtime's tool
// path, a gateway restart after turn 15, and enough turns that maintain
// replaces old read results in OpenClaw's transcript. Beyond the suite's
// tests (every turn answers, no overflow, no reply cut at the output cap,
// caps explained, every message stored), this window checks the engine's
// own compaction, summaries in every later request, lcm_expand and the
// transcript rewrites.
//
// LOSSLESS_E2E_BUDGETS_OUT=FILE writes the budgets the engine received in
// the first 12 turns of the run (merged into FILE with the other windows';
// lossless/testdata/openclaw-budgets.json is such a file).
// LOSSLESS_E2E_LONG_TURNS shortens the run while debugging.

import { test } from "node:test";
import assert from "node:assert/strict";
import { contentText, summaryIds, SUMMARY_OPEN } from "./harness.mjs";
import { requestTurn, promptIndex, compareStored } from "./long-session.mjs";
import { longSessionSuite, none } from "./long-session-suite.mjs";

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

longSessionSuite({
  window: 24_000,
  tag: "w24",
  extra: (S) => {
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
  },
});
