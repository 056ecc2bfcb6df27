// End to end through a real OpenClaw gateway (`openclaw gateway run`) and
// real `openclaw agent` turns sent to it, with the lossless plugin installed
// as the README says and the fake model server as the provider. One scenario
// runs first (before): four sessions, ~20 turns; every test then checks one
// property of what happened, so each fails on its own.
//
// Why the gateway: an embedded `openclaw agent --local` turn costs ~30 s of
// CPU on 2 cores (the CLI loads and checks the whole runtime each time);
// through a warm gateway a turn is ~5 s. local.test.mjs covers --local.

import { isDeepStrictEqual } from "node:util";
import { describe, before, after, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import {
  OpenClawEnv,
  skipReason,
  freePort,
  chatRequests,
  contentText,
  recallMessages,
  recallItems,
  summaryIds,
  requestsForPrompt,
  degradationLines,
  jsonEqual,
  RECALL_OPEN,
  SUMMARY_OPEN,
  PLUGIN_DIR,
} from "./harness.mjs";
import { startFakeModel } from "./fake-model.mjs";
import { filler } from "./text.mjs";

const skip = skipReason();

const K_FACTS = "agent:main:e2e-facts";
const K_RECALL = "agent:main:e2e-recall";
const K_LONG = "agent:main:e2e-long";
const K_MAINT = "agent:main:e2e-maintain";
const K_KILL = "agent:main:e2e-kill";

const CONTEXT_WINDOW = 24_000;
const FACT = "HELIOTROPE-7";
// 10 turns of ~2,500 tokens: ~30K tokens with the ~4.7K of system prompt and
// tools, past the 24K window the model server enforces.
const LONG_TURNS = 10;
const LONG_CHARS = 10_000;
/** The engine's synthetic blocks in a text: <lcm_recall>...</lcm_recall>, <lcm_summary id=...>...</lcm_summary>. */
function engineBlocks(text) {
  return text.match(/<lcm_recall>[\s\S]*?<\/lcm_recall>|<lcm_summary id=[\s\S]*?<\/lcm_summary>/g) ?? [];
}

const longMarker = (i) => `LONG-TURN-${String(i).padStart(2, "0")}-MARKER`;

// Prompts, each unique so a turn's requests can be found in the model log.
const P = {
  fact1: `Please remember this for later: the launch codename is ${FACT} and the backup site is in Tromsø.`,
  fact2: "Thanks. Also note that the quarterly budget review happens on Thursdays.",
  recallQ: "Which launch codename did we agree on earlier? I think it started with HELIOTROPE.",
  unrelated: "Describe a sunset over the ocean in one short sentence.",
  inWindow: "Remind me of the HELIOTROPE launch codename, please.",
  read: "Please read the file big-notes.txt in the workspace and tell me what it says. (LONG-READ)",
  expand: "Expand the earliest summary of this conversation, please. (EXPAND-REQUEST)",
  overflow: "One more short note for the record. (OVERFLOW-PROBE)",
  killPre: "Getting ready for the next step. (KILL-PRE)",
  kill: "KILL-TEST: this reply will be slow.",
  killPost: "After the crash, are you still there? (KILL-POST)",
};

describe("OpenClaw gateway + lossless plugin, end to end", { skip }, () => {
  let env;
  let fake;
  const S = { errors: [], restarts: [], summaryRequestSeq: null, expandId: null, killedAt: null, killedPid: null };
  const bigMarker = `BIGFILE-MARKER-${process.pid}`;
  // Under the read tool's output limit (about 11.9 KB on 2026.9.6), so the
  // tool result OpenClaw stores holds the whole file.
  const bigText = `${bigMarker} start.\n${filler(9_000, 99, 100)}\n${bigMarker} end.\n`;

  before(
    async () => {
      env = new OpenClawEnv({ name: "gateway" });
      fake = await startFakeModel({ logFile: path.join(env.root, "model-requests.jsonl"), contextLimitTokens: CONTEXT_WINDOW });
      env.writeConfig(env.baseConfig({ fake, contextWindow: CONTEXT_WINDOW, gatewayPort: await freePort() }));
      const install = await env.install();
      S.install = install;
      if (install.code !== 0) throw new Error(`plugin install failed (${install.code}):\n${install.stdout}\n${install.stderr}`);
      env.selectEngine(
        "lossless",
        env.engineConfig({ freshTailMessages: 4, leafChunkTokens: 4000, leafTargetTokens: 400, maintainMinTokens: 1000 }),
      );
      fs.writeFileSync(path.join(env.workspace, "big-notes.txt"), bigText);
      S.gatewayPid = (await env.startGateway()).child.pid;

      const turn = async (sessionKey, message) => {
        const t = await env.turn({ sessionKey, message });
        if (t.code !== 0) S.errors.push(`turn ${sessionKey} "${message.slice(0, 40)}" exited ${t.code}: ${t.stderr.slice(-1500)}`);
        return t;
      };
      // Each phase runs on a gateway where the engine is not quarantined: a
      // quarantine (logged by OpenClaw) lasts for the process, so after one
      // the gateway is restarted and the next phase gets a fair chance; the
      // quarantine itself fails test a.
      let seen = 0;
      const phase = async (name, fn) => {
        const deg = degradationLines(env.gatewayOutput());
        if (deg.length > seen) {
          S.restarts.push({ before: name, lines: deg.slice(seen) });
          S.gatewayPid = (await env.restartGateway()).child.pid;
        }
        seen = deg.length;
        try {
          await fn();
        } catch (err) {
          S.errors.push(`phase ${name}: ${err?.stack ?? err}`);
        }
      };

      // Facts in one session, recalled from another.
      await phase("facts", async () => {
        await turn(K_FACTS, P.fact1);
        await turn(K_FACTS, P.fact2);
        await turn(K_RECALL, P.recallQ);
        await turn(K_RECALL, P.unrelated);
        await turn(K_FACTS, P.inWindow);
      });

      // A long session past the window: compaction, lcm_expand, overflow recovery.
      await phase("long", async () => {
        for (let i = 1; i <= LONG_TURNS; i++) {
          await turn(K_LONG, `${longMarker(i)}: a long note for the record. ${filler(LONG_CHARS, i)}`);
          const last = chatRequests(fake).filter((r) => r.body?.tools?.length > 0).at(-1); // the turn's last agent request
          if (S.summaryRequestSeq == null && last && summaryIds(last).length) S.summaryRequestSeq = last.seq;
        }
        // lcm_expand on the newest summary id the model was shown.
        const withSummary = chatRequests(fake).filter((r) => summaryIds(r).length);
        S.expandId = withSummary.length ? summaryIds(withSummary.at(-1))[0] : null;
        if (S.expandId) {
          fake.enqueue({ toolCall: { name: "lcm_expand", arguments: { id: S.expandId, maxTokens: 3000 } } });
          await turn(K_LONG, P.expand);
        } else {
          S.errors.push("no <lcm_summary> reached the model in the long session; lcm_expand was not tried");
        }
        // The provider says the context is too long, once.
        fake.enqueue({ overflow: true });
        await turn(K_LONG, P.overflow);
      });

      // A large tool result, then turns that push it out of the fresh tail:
      // maintain should replace it in OpenClaw's transcript.
      await phase("maintain", async () => {
        fake.enqueue({ toolCall: { name: "read", arguments: { path: path.join(env.workspace, "big-notes.txt") } } });
        await turn(K_MAINT, P.read);
        for (let i = 1; i <= 3; i++) await turn(K_MAINT, `MAINT-AFTER-${i}: a short follow-up note.`);
      });

      // kill -9 of the engine process while a turn waits for the model.
      await phase("kill", async () => {
        S.killLogOffset = env.gatewayOutput().length;
        await turn(K_KILL, P.killPre);
        const onArrive = (entry) => {
          const msgs = entry.body?.messages ?? [];
          const last = msgs.filter((m) => m.role === "user").at(-1);
          if (S.killedAt || !last || !contentText(last.content).includes("KILL-TEST")) return;
          const target = env.liveEngine();
          if (!target) {
            S.errors.push("no live engine process to kill");
            S.killedAt = Date.now();
            return;
          }
          const pid = target.childPid;
          S.killedPid = pid;
          S.killedAt = Date.now();
          try {
            process.kill(pid, "SIGKILL");
          } catch (err) {
            S.errors.push(`kill -9 ${pid}: ${err.message}`);
          }
        };
        fake.events.on("arrive", onArrive);
        fake.enqueue({ delayMs: 3000, text: "Slow reply, sent after the engine process was killed." });
        try {
          await turn(K_KILL, P.kill);
        } finally {
          fake.events.off("arrive", onArrive);
        }
        await turn(K_KILL, P.killPost);
      });

      await env.stopGateway();
      S.transcripts = {};
      for (const k of [K_FACTS, K_RECALL, K_LONG, K_MAINT, K_KILL]) S.transcripts[k] = await env.transcript(k);
      S.children = env.children();
      S.requests = chatRequests(fake);
    },
    { timeout: 20 * 60_000 },
  );

  after(async () => {
    await fake?.close();
    await env?.cleanup();
  });

  const turnsOf = (key) => env.turns.filter((t) => t.sessionKey === key);

  test("the plugin installs with the README's command", () => {
    assert.equal(S.install.code, 0, S.install.stderr);
    const cfg = env.readConfig();
    assert.ok(cfg.plugins?.load?.paths?.some((p) => path.resolve(p) === PLUGIN_DIR), `plugins.load.paths does not name ${PLUGIN_DIR}`);
    assert.equal(cfg.plugins?.entries?.lossless?.enabled, true);
  });

  test("a. the slot resolves to lossless on every turn (no legacy degradation)", () => {
    const problems = [...S.errors.filter((e) => e.startsWith("turn ") || e.startsWith("phase "))];
    for (const r of S.restarts) problems.push(`the gateway was restarted before phase "${r.before}" after a quarantine`);
    const deg = degradationLines(env.gatewayOutput());
    if (deg.length) problems.push(`OpenClaw degraded or quarantined the engine:\n${deg.join("\n")}`);
    const assembles = env.calls("assemble");
    const commits = env.calls("commitTurn");
    for (const t of env.turns) {
      const served = assembles.some((c) => c.params?.prompt === t.message || JSON.stringify(c.params?.prompt ?? "").includes(JSON.stringify(t.message).slice(1, 60)));
      if (!served) problems.push(`turn "${t.message.slice(0, 50)}": no assemble call carried its prompt`);
      const committed = commits.some(
        (c) => c.result && !c.error && (c.params?.messages ?? []).some((m) => m.role === "user" && contentText(m.content) === t.message),
      );
      if (!committed) problems.push(`turn "${t.message.slice(0, 50)}": no successful commitTurn carried its user message`);
    }
    for (const b of env.calls("bootstrap")) {
      const sel = b.params?.runtimeSettings?.contextEngineSelection;
      if (sel && sel.selectedId !== "lossless") problems.push(`bootstrap saw contextEngineSelection ${JSON.stringify(sel)}`);
    }
    assert.deepEqual(problems, []);
  });

  test("b. every message of every turn is in the store, JSON-equal to OpenClaw's transcript", () => {
    const problems = [];
    for (const [key, tr] of Object.entries(S.transcripts)) {
      if (!tr.sessionId) {
        problems.push(`${key}: no transcript in OpenClaw's store`);
        continue;
      }
      let exp;
      try {
        exp = env.exportSession(tr.sessionId);
      } catch (err) {
        problems.push(`${key}: ${err.message}`);
        continue;
      }
      if (exp.messages.length !== tr.messages.length)
        problems.push(`${key}: OpenClaw's transcript has ${tr.messages.length} messages, lossless export ${exp.messages.length}`);
      const n = Math.max(exp.messages.length, tr.messages.length);
      for (let i = 0; i < n; i++) {
        const a = tr.messages[i];
        const b = exp.messages[i];
        if (a && b && JSON.stringify(a).includes("lcm-large:") && a.role === b.role && a.toolCallId === b.toolCallId) continue; // rewritten by maintain (test i)
        if (!jsonEqual(a, b)) {
          problems.push(`${key} message ${i}: transcript ${JSON.stringify(a)?.slice(0, 300)} != store ${JSON.stringify(b)?.slice(0, 300)}`);
          break;
        }
      }
    }
    assert.deepEqual(problems, []);
  });

  test("d. the model request holds the assembled context, recall at most once, no 1970 timestamps", () => {
    const problems = [];
    for (const r of S.requests) {
      const text = JSON.stringify(r.body);
      if (text.includes("1970-01-01")) problems.push(`request ${r.seq} contains 1970-01-01`);
      const blocks = text.split(RECALL_OPEN).length - 1;
      if (blocks > 1) problems.push(`request ${r.seq} holds ${blocks} recall blocks`);
      for (const m of recallMessages(r)) {
        for (const it of recallItems(contentText(m.content))) {
          const time = /time="([^"]*)"/.exec(it.attrs)?.[1];
          if (!time || !(Date.parse(time) > Date.parse("2001-01-01"))) problems.push(`request ${r.seq}: recall item with time ${JSON.stringify(time)}`);
        }
      }
    }
    // The engine's blocks in a request are the ones assemble returned, verbatim.
    const assembled = new Set();
    for (const c of env.calls("assemble")) for (const m of c.result?.messages ?? []) for (const b of engineBlocks(contentText(m.content))) assembled.add(b);
    let seen = 0;
    for (const r of S.requests) {
      for (const m of r.body?.messages ?? []) {
        if (m.role === "system") continue;
        for (const b of engineBlocks(contentText(m.content))) {
          seen++;
          if (!assembled.has(b)) problems.push(`request ${r.seq} holds an engine block assemble never returned: ${b.slice(0, 200)}`);
        }
      }
    }
    if (seen === 0) problems.push("no request held an engine block (<lcm_recall> or <lcm_summary id=...>)");
    // The second turn of the facts session sees the first one.
    const second = requestsForPrompt(fake, P.fact2);
    if (!second.length) problems.push("no model request for the second facts turn");
    else if (!second.every((r) => (r.body.messages ?? []).some((m) => contentText(m.content).includes(FACT))))
      problems.push("the second facts turn's request does not hold the first turn");
    assert.deepEqual(problems, []);
  });

  test("d. a fact from one session is recalled in another", () => {
    const reqs = requestsForPrompt(fake, P.recallQ);
    assert.ok(reqs.length > 0, "no model request for the recall question");
    const recalled = reqs.filter((r) => recallMessages(r).some((m) => contentText(m.content).includes(FACT)));
    assert.ok(recalled.length > 0, `no recall block with ${FACT} in the recall question's requests: ${JSON.stringify(reqs.map((r) => recallMessages(r).map((m) => contentText(m.content).slice(0, 400))))}`);
  });

  test("e. a prompt with nothing relevant gets no recall block", () => {
    const reqs = requestsForPrompt(fake, P.unrelated);
    assert.ok(reqs.length > 0, "no model request for the unrelated prompt");
    for (const r of reqs) assert.equal(recallMessages(r).length, 0, `recall block for an unrelated prompt: ${contentText(recallMessages(r)[0]?.content).slice(0, 600)}`);
  });

  test("e. a recalled item is never one already in the context", () => {
    const problems = [];
    for (const r of S.requests) {
      const msgs = r.body?.messages ?? [];
      for (const rm of recallMessages(r)) {
        const others = msgs.filter((m) => m !== rm).map((m) => contentText(m.content));
        for (const it of recallItems(contentText(rm.content))) {
          const body = it.body.replace(/^summary: /, "").trim();
          const probe = body.slice(0, 80);
          if (probe.length >= 20 && others.some((t) => t.includes(probe))) problems.push(`request ${r.seq}: recalled item already in the context: ${probe}`);
        }
      }
    }
    // The in-window question: the fact is in the window, so it must not come back as recall.
    for (const r of requestsForPrompt(fake, P.inWindow)) {
      for (const rm of recallMessages(r)) {
        if (contentText(rm.content).includes(P.fact1.slice(0, 60))) problems.push(`request ${r.seq}: the in-window fact was recalled again`);
      }
    }
    assert.deepEqual(problems, []);
  });

  test("f. a long session compacts before the model server ever reports an overflow; the next request holds a summary", () => {
    const auto = S.requests.filter((r) => r.response?.source === "auto-overflow");
    assert.deepEqual(
      auto.map((r) => `request ${r.seq} (~${r.approxTokens} tokens) overflowed`),
      [],
      "the model server had to report a context overflow",
    );
    assert.ok(S.summaryRequestSeq != null, `no request of the long session held a ${SUMMARY_OPEN} block`);
    // The long session's requests: a user message of its own (not a recall
    // block of another session's request quoting it) names a long turn.
    const ownLong = (m) => m.role === "user" && /LONG-TURN-\d\d-MARKER/.test(contentText(m.content)) && !contentText(m.content).includes(RECALL_OPEN);
    // (Agent requests only: the engine's summarization calls to OpenClaw's
    // model, the default summarizer, carry no tools and quote the turns.)
    const longReqs = S.requests.filter((r) => r.body?.tools?.length > 0 && (r.body?.messages ?? []).some(ownLong));
    const lost = longReqs.filter((r) => r.seq >= S.summaryRequestSeq && summaryIds(r).length === 0);
    assert.deepEqual(
      lost.map((r) => `request ${r.seq}: ${(r.body?.messages ?? []).map((m) => `${m.role}: ${contentText(m.content).slice(0, 80)}`).join(" | ").slice(0, 600)}`),
      [],
      "a long-session request after the first summary lost it",
    );
  });

  test("f. compact returns a finite tokensAfter (overflow recovery and any other compact call)", () => {
    const compacts = env.calls("compact");
    assert.ok(compacts.length > 0, "compact was never called (the scripted overflow should make OpenClaw call it)");
    for (const c of compacts) {
      assert.ok(!c.error, `compact failed: ${JSON.stringify(c.error)}`);
      const after = c.result?.result?.tokensAfter;
      assert.ok(Number.isFinite(after), `compact returned no finite result.tokensAfter: ${JSON.stringify(c.result)?.slice(0, 500)}`);
    }
    const probe = turnsOf(K_LONG).find((t) => t.message === P.overflow);
    assert.equal(probe?.code, 0, `the turn after the overflow failed: ${probe?.stderr?.slice(-800)}`);
  });

  test("g. lcm_grep, lcm_describe and lcm_expand are among the tools of every model request", () => {
    const missing = [];
    for (const r of S.requests) {
      if (!r.body?.tools) continue;
      const names = new Set(r.body.tools.map((t) => t.function?.name));
      for (const n of ["lcm_grep", "lcm_describe", "lcm_expand"]) if (!names.has(n)) missing.push(`request ${r.seq} lacks ${n}`);
    }
    assert.ok(S.requests.some((r) => r.body?.tools), "no request carried tools");
    assert.deepEqual(missing, []);
  });

  test("g. lcm_expand on a summary id returns the raw messages in the next request", () => {
    assert.ok(S.expandId, `no summary id to expand (${S.errors.join("; ")})`);
    const reqs = requestsForPrompt(fake, "EXPAND-REQUEST");
    const call = reqs.findIndex((r) => r.response?.toolCalls?.some((c) => c.function.name === "lcm_expand"));
    assert.ok(call >= 0, "the scripted lcm_expand call was not made");
    const next = reqs[call + 1];
    assert.ok(next, "no model request after the lcm_expand call");
    const toolMsgs = (next.body.messages ?? []).filter((m) => m.role === "tool");
    const result = toolMsgs.map((m) => contentText(m.content)).join("\n");
    assert.ok(toolMsgs.length > 0, "the request after lcm_expand has no tool result");
    const procs = S.children.map((c) => `pid ${c.wrapperPid} (run by ${c.parentPid}, initialize ${c.calls[0]?.error ? "failed" : "ok"})`);
    assert.ok(
      /LONG-TURN-\d\d-MARKER/.test(result),
      `the lcm_expand result holds no raw message: ${result.slice(0, 800)}\nengine processes: ${procs.join(", ")}; gateway pid ${S.gatewayPid}`,
    );
    assert.ok(!/error|not found|unknown/i.test(result.slice(0, 200)), `lcm_expand failed: ${result.slice(0, 400)}`);
  });

  test("i. maintain asks OpenClaw to rewrite the old large tool result, by its transcript entry id", () => {
    const tr = S.transcripts[K_MAINT];
    const event = tr.all.find((e) => e.type === "message" && JSON.stringify(e.message).includes(bigMarker));
    assert.ok(event, "the large tool result is not in OpenClaw's transcript");
    const rewrites = env.children().flatMap((c) => c.hostCalls).filter((h) => h.method === "host/rewriteTranscriptEntries");
    const maint = env.calls("maintain").filter((c) => c.params?.sessionKey === K_MAINT);
    const ids = rewrites.flatMap((h) => (h.params?.request?.replacements ?? h.params?.replacements ?? []).map((x) => x.entryId));
    assert.ok(
      ids.includes(event.id),
      `no rewriteTranscriptEntries request named entry ${event.id} (requested: ${JSON.stringify(ids.slice(0, 5))}; maintain answers: ${JSON.stringify(maint.map((c) => c.result ?? c.error).slice(-2))})`,
    );
  });

  test("i. maintain replaces an old large tool result through rewriteTranscriptEntries; the original stays expandable", () => {
    const tr = S.transcripts[K_MAINT];
    const readResults = tr.messages.filter((m) => m.role === "toolResult" || m.role === "tool");
    assert.ok(readResults.length > 0, "no tool result in the long session's transcript");
    const big = readResults.find((m) => JSON.stringify(m).includes(bigMarker));
    const rewritten = readResults.find((m) => JSON.stringify(m).includes("lcm-large:"));
    const rewrites = env.children().flatMap((c) => c.hostCalls).filter((h) => h.method === "host/rewriteTranscriptEntries");
    const maint = env.calls("maintain").filter((c) => c.params?.sessionKey === K_MAINT);
    assert.ok(
      rewritten,
      `the large tool result was not replaced in OpenClaw's transcript (still ${JSON.stringify(big)?.length ?? 0} bytes; ` +
        `rewrite callbacks: ${rewrites.length}, answered with ${JSON.stringify(rewrites.map((h) => h.error ?? h.result).slice(-1))}; ` +
        `maintain answers: ${JSON.stringify(maint.map((c) => c.result ?? c.error).slice(-2))})`,
    );
    const original = tr.all.find((e) => e.type === "message" && JSON.stringify(e.message).includes(bigMarker));
    assert.ok(JSON.stringify(rewritten).length < JSON.stringify(original?.message ?? bigText).length / 2, "the transcript did not shrink");
    const exp = env.exportSession(tr.sessionId);
    // The engine keeps the tool result exactly as OpenClaw stored it before
    // the rewrite (JSON-equal), which is the whole file here.
    assert.ok(original, "the original tool result is not among OpenClaw's transcript events");
    assert.ok(
      exp.messages.some((m) => isDeepStrictEqual(m, original.message)),
      "lossless export does not hold the original tool result as OpenClaw stored it",
    );
    assert.ok(exp.lines.some((l) => l.includes(`${bigMarker} end.`)), "the stored original is not the whole file");
    const id = /lcm-large:[A-Za-z0-9_\-:.]+/.exec(JSON.stringify(rewritten))[0];
    const ex = env.lossless(["expand", id, "--session", tr.sessionId]);
    assert.equal(ex.code, 0, ex.stderr);
    assert.ok(ex.stdout.includes(bigMarker), `lossless expand ${id} did not return the original`);
  });

  test("j. kill -9 of the engine process mid-turn loses nothing; the next call is served by the restarted process", () => {
    assert.ok(S.killedAt, "the engine process was not killed (the KILL-TEST request never arrived)");
    const after = S.children.filter((c) => c.time > S.killedAt);
    assert.ok(after.length > 0, "no engine process was started after the kill");
    const firstCall = after[0].calls.find((c) => c.method !== "initialize");
    assert.ok(firstCall, "the restarted engine process got no call");
    assert.ok(firstCall.answered && !firstCall.error, `the first call after the kill failed: ${JSON.stringify(firstCall.error)}`);
    const killTurn = turnsOf(K_KILL).find((t) => t.message === P.kill);
    assert.equal(killTurn?.code, 0, `the killed turn failed: ${killTurn?.stderr?.slice(-800)}`);
    const log = env.gatewayOutput().slice(S.killLogOffset ?? 0);
    const deg = degradationLines(log);
    const queued = log
      .split("\n")
      .filter((l) => /\[context-engine\].*(remains queued|failed to retry|skipped accepted turn)/.test(l));
    assert.deepEqual([...deg, ...queued], [], "OpenClaw saw the crash");
    const tr = S.transcripts[K_KILL];
    const exp = env.exportSession(tr.sessionId);
    assert.equal(exp.messages.length, tr.messages.length, "message count differs after the crash");
    tr.messages.forEach((m, i) => assert.ok(jsonEqual(m, exp.messages[i]), `message ${i} differs after the crash`));
    assert.ok(exp.lines.some((l) => l.includes("KILL-TEST")), "the killed turn's user message is not in the store");
  });

  test("k. no secret of OpenClaw's config reaches the engine process", () => {
    const auth = S.requests.map((r) => r.auth);
    assert.ok(auth.includes(`Bearer ${env.apiKey}`), "the model server never saw the configured apiKey (the check below would be vacuous)");
    assert.ok(S.children.length > 0, "no engine process ran");
    for (const c of S.children) {
      for (const secret of env.secrets) {
        assert.ok(!c.stdinRaw.includes(secret), `engine process ${c.wrapperPid} received a secret on stdin (${secret.slice(0, 14)}…)`);
      }
    }
  });
});
