#!/usr/bin/env node
// The README's figures for issue 26 ("Done when" 7): the long session of
// long-session.test.mjs, run once with the lossless engine and once with
// `legacy` on the same turns, printed as a markdown table.
//
//   node e2e/openclaw/long-session-figures.mjs [--turns N (42)] [--context-window TOKENS (24000)] [--json FILE] [--only lossless|legacy]
//   node e2e/openclaw/long-session-figures.mjs --table DIR
//
// --table DIR runs nothing: it prints, as a markdown table, the figures the
// long-session tests wrote into DIR ($LOSSLESS_E2E_FIGURES_DIR: one
// long-session-<window>-<engine>.json per run; see long-session-suite.mjs):
// per window and engine, turns failed, overflow answers, replies cut at the
// output cap (all; on calls where OpenClaw's own part left room for the
// reply), calls with a cap of 16 tokens or less, the smallest cap, the
// largest prompt (o200k_base).
//
// Both phases share one isolated OpenClaw installation (the plugin
// installed by the README's command, default plugin config, OpenClaw's
// default tool settings, the workspace's bootstrap files) and one fake
// model enforcing the window. Phase 1: a real gateway with the slot on
// "lossless"; the engine process is `lossless serve --stdio --timing FILE`
// behind the traffic recorder, so the engine's own time per request is
// known and its JSON-RPC traffic tells compact calls apart from its own
// compactions. Phase 2: a fresh gateway with the slot on "legacy" (no
// engine involved), the same prompts in a new session.
//
// Figures per engine: turns that failed, model requests, overflow answers,
// requests over the window (the fake's estimate: characters / 4), the
// largest request; compactions: for lossless the summaries its own
// compaction made vs OpenClaw's compact calls (and their outcome), for
// legacy OpenClaw's compaction entries in the transcript; engine time per
// turn (the engine's `serve --timing` ms of every request that started in
// the turn or before the next one) and the wall time of `openclaw agent`.
//
// Needs Node >= 24.16 and OpenClaw 2026.9.6: without $OPENCLAW_ENTRY it runs
// .ci/openclaw-setup.sh and re-runs itself with that Node. $LOSSLESS_BIN is
// the engine binary (else `go build`); $LOSSLESS_E2E_KEEP=1 keeps the
// temporary directory.

import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO_ROOT = path.resolve(HERE, "../..");

function parseArgs(argv) {
  const o = { turns: 42, contextWindow: 24_000, json: null, only: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => {
      const v = a.includes("=") ? a.slice(a.indexOf("=") + 1) : argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    if (a === "--turns" || a.startsWith("--turns=")) o.turns = Number(val());
    else if (a === "--context-window" || a.startsWith("--context-window=")) o.contextWindow = Number(val());
    else if (a === "--json" || a.startsWith("--json=")) o.json = val();
    else if (a === "--only" || a.startsWith("--only=")) o.only = val();
    else if (a === "-h" || a === "--help") {
      process.stdout.write("usage: node e2e/openclaw/long-session-figures.mjs [--turns N (42)] [--context-window TOKENS (24000)] [--json FILE] [--only lossless|legacy]\n");
      process.exit(0);
    } else throw new Error(`unknown argument ${a}`);
  }
  if (o.only && o.only !== "lossless" && o.only !== "legacy") throw new Error("--only is lossless or legacy");
  if (!Number.isInteger(o.turns) || o.turns < 7) throw new Error("--turns must be an integer >= 7");
  if (!Number.isInteger(o.contextWindow) || o.contextWindow < 4096) throw new Error("--context-window must be an integer >= 4096");
  return o;
}

/** --table DIR: the tests' figures as the README's table. */
function table(dir) {
  const files = fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => /^long-session-\d+-(lossless|legacy)\.json$/.test(f)) : [];
  if (files.length === 0) {
    process.stderr.write(`long-session-figures: no long-session-<window>-<engine>.json in ${dir} (run the tests with LOSSLESS_E2E_FIGURES_DIR=${dir})\n`);
    process.exit(1);
  }
  const runs = files.map((f) => JSON.parse(fs.readFileSync(path.join(dir, f), "utf8"))).sort((a, b) => a.window - b.window || (a.engine === "lossless" ? -1 : 1));
  const lines = [
    "| window | engine | turns failed (with no room beside OpenClaw's own part) | overflow answers | replies cut (agent calls) | cut on calls with room for the reply (such calls) | calls with cap ≤ 16 | smallest cap | largest prompt (o200k; chars/4) | summarization calls cut | when (load) |",
    "|---|---|---|---|---|---|---|---|---|---|---|",
  ];
  for (const r of runs) {
    lines.push(
      `| ${r.window} | ${r.engine} | ${r.failedTurns.length} of ${r.turns} (${r.failedWithNoRoom?.length ?? "?"}) | ${r.overflows} | ${r.repliesCut} (${r.agentCalls}) | ${r.repliesCutWithRoom} (${r.callsWithRoom}) | ${r.capsAtMost16} | ${r.smallestCap ?? "—"} | ${r.largest}; ${r.largestChars4} | ${r.sideCut} of ${r.sideCalls} | ${r.at?.slice(0, 16)} (${r.load}) |`,
    );
  }
  process.stdout.write(lines.join("\n") + "\n");
}
{
  const i = process.argv.indexOf("--table");
  if (i >= 0) {
    table(process.argv[i + 1] ?? ".");
    process.exit(0);
  }
}

let opts;
try {
  opts = parseArgs(process.argv.slice(2));
} catch (err) {
  process.stderr.write(`long-session-figures: ${err.message}\n`);
  process.exit(2);
}

const nodeOk = () => {
  const [a, b] = process.versions.node.split(".").map(Number);
  return a > 24 || (a === 24 && b >= 16);
};
if (!nodeOk() || !process.env.OPENCLAW_ENTRY || !process.env.LOSSLESS_TOKENIZER_DIR) {
  if (process.env.LOSSLESS_FIGURES_REEXEC === "1") {
    process.stderr.write(`long-session-figures: still no Node >= 24.16 / OpenClaw after .ci/openclaw-setup.sh (node ${process.version})\n`);
    process.exit(1);
  }
  const setup = spawnSync("bash", [path.join(REPO_ROOT, ".ci/openclaw-setup.sh")], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
  if (setup.status !== 0) {
    process.stderr.write("long-session-figures: .ci/openclaw-setup.sh failed\n");
    process.exit(1);
  }
  const env = { ...process.env, LOSSLESS_FIGURES_REEXEC: "1" };
  for (const m of setup.stdout.matchAll(/^export ([A-Z_]+)=(.*)$/gm)) env[m[1]] = m[2].replace(/^'(.*)'$/, "$1");
  const r = spawnSync(env.LOSSLESS_NODE_BIN, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], { stdio: "inherit", env });
  process.exit(r.status ?? 1);
}

const { OpenClawEnv, prerequisites, freePort, chatRequests, degradationLines, parseJsonl } = await import("./harness.mjs");
const { startFakeModel } = await import("./fake-model.mjs");
const { planTurns, scriptModel, runTurns, attributedTraffic, compactionFigures, overflowFigures, capRows, capFigures, systemPromptAdditions } = await import("./long-session.mjs");

const sorted = (xs) => [...xs].sort((a, b) => a - b);
function quantile(xs, q) {
  if (!xs.length) return NaN;
  const s = sorted(xs);
  const pos = (s.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return s[lo] + (s[hi] - s[lo]) * (pos - lo);
}
const sum = (xs) => xs.reduce((a, b) => a + b, 0);
const f0 = (x) => (Number.isFinite(x) ? x.toFixed(0) : "—");
const f1 = (x) => (Number.isFinite(x) ? x.toFixed(1) : "—");

async function phase(env, fake, slot, plan, state) {
  const timingFile = path.join(env.root, `timing-${slot}.jsonl`);
  env.selectEngine(slot, env.engineConfig({ bridge: { args: ["serve", "--stdio", "--timing", timingFile] } }));
  const logFrom = env.gatewayOutput().length;
  const fromSeq = (chatRequests(fake).at(-1)?.seq ?? 0) + 1;
  const gw = await env.startGateway();
  process.stderr.write(`long-session-figures: ${slot}: gateway ready in ${(gw.readyMs / 1000).toFixed(1)} s\n`);
  const sessionKey = `agent:main:long-figures-${slot}`;
  const started = Date.now();
  const turns = await runTurns(env, fake, {
    plan,
    sessionKey,
    state,
    expand: slot === "lossless", // legacy has no summary to expand: that turn is answered with text
    onTurn: (r) => process.stderr.write(`long-session-figures: ${slot}: turn ${r.i} (${r.kind}) ${r.turn.ms} ms${r.failure ? ` FAILED: ${r.failure}` : ""}\n`),
  });
  const endedAt = Date.now();
  await env.stopGateway();
  const reqs = chatRequests(fake).filter((r) => r.seq >= fromSeq);
  const out = {
    slot,
    turns: turns.length,
    wallSeconds: (endedAt - started) / 1000,
    failed: turns.filter((t) => t.failure).map((t) => `${t.i}: ${t.failure}`),
    degradation: degradationLines(env.gatewayOutput().slice(logFrom)),
    ...overflowFigures(reqs, opts.contextWindow),
    turnWallMs: turns.map((t) => t.turn.ms),
  };
  const additions = slot === "lossless" ? systemPromptAdditions(attributedTraffic(env, turns).calls) : [];
  out.caps = capFigures(capRows(reqs, { window: opts.contextWindow, additions }));
  const tr = await env.transcript(sessionKey);
  out.transcriptCompactions = tr.all.filter((e) => e.type === "compaction").length;
  if (slot === "lossless") {
    const { calls, callbacks } = attributedTraffic(env, turns);
    out.compaction = compactionFigures(env, calls);
    out.rewrites = callbacks.filter((c) => c.method === "host/rewriteTranscriptEntries").length;
    const timing = fs.existsSync(timingFile) ? parseJsonl(fs.readFileSync(timingFile, "utf8")).filter((r) => r && typeof r.method === "string") : [];
    out.engineMs = turns.map((t, k) => {
      const next = k + 1 < turns.length ? turns[k + 1].turn.startedAt : endedAt;
      return sum(timing.filter((r) => r.startMs >= t.turn.startedAt && r.startMs < next).map((r) => r.ms));
    });
    out.engineRequests = timing.length;
  }
  return out;
}

/** A phase that was not run (--only): its column reads "not run". */
const NOT_RUN = new Proxy({}, { get: (_, k) => (k === "slot" ? "not run" : k === "failed" || k === "degradation" || k === "turnWallMs" || k === "engineMs" ? [] : k === "compaction" ? new Proxy({}, { get: (_, j) => (j === "compactReasons" ? [] : "not run") }) : k === "caps" ? new Proxy({}, { get: () => "not run" }) : "not run") });

function report(L, G) {
  const lines = [];
  const out = (s = "") => lines.push(s);
  const c = L.compaction;
  out(`long session: ${opts.turns} turns in one session (notes of 3-8 KB, short questions, a read of a 6-11 KB file every 5th turn, one lcm_expand of a summary), model contextWindow ${opts.contextWindow}, OpenClaw 2026.9.6 with default tool settings, the fake model (o200k_base) answering 400 context_length_exceeded when prompt + max_completion_tokens exceed the window and cutting replies at max_completion_tokens`);
  out(`machine: ${process.platform} ${os.cpus().length} cores, Node ${process.version}, load at start ${startLoad}`);
  out();
  out("| | lossless | legacy |");
  out("|---|---|---|");
  out(`| turns failed | ${L.failed.length} of ${L.turns} | ${G.failed.length} of ${G.turns} |`);
  out(`| model requests | ${L.requests} | ${G.requests} |`);
  out(`| overflow answers (400 context_length_exceeded) | ${L.overflows} | ${G.overflows} |`);
  out(`| requests over the window | ${L.overWindow} | ${G.overWindow} |`);
  out(`| largest request (o200k_base tokens; chars / 4) | ${L.largest}; ${L.largestChars4} | ${G.largest}; ${G.largestChars4} |`);
  out(`| replies cut at the output cap (of agent calls) | ${L.caps?.repliesCut} (${L.caps?.agentCalls}) | ${G.caps?.repliesCut} (${G.caps?.agentCalls}) |`);
  out(`| calls with an output cap of 16 or less | ${L.caps?.capsAtMost16} | ${G.caps?.capsAtMost16} |`);
  out(`| compactions by the engine on its own (summaries made) | ${c.summariesByEngine ?? "?"} | — |`);
  out(`| OpenClaw \`compact\` calls (compacted / nothing to compact / failed) | ${c.compactCalls} (${c.compactCompacted} / ${c.compactNothing} / ${c.compactFailed}), ${c.summariesByCompact} summaries | — |`);
  out(`| OpenClaw's own compactions (transcript entries) | ${L.transcriptCompactions} | ${G.transcriptCompactions} |`);
  out(`| engine ms per turn, median / p90 / mean (\`serve --timing\`) | ${f1(quantile(L.engineMs, 0.5))} / ${f1(quantile(L.engineMs, 0.9))} / ${f1(sum(L.engineMs) / L.engineMs.length)} | — |`);
  out(`| \`openclaw agent\` wall ms per turn, median / p90 | ${f0(quantile(L.turnWallMs, 0.5))} / ${f0(quantile(L.turnWallMs, 0.9))} | ${f0(quantile(G.turnWallMs, 0.5))} / ${f0(quantile(G.turnWallMs, 0.9))} |`);
  out(`| whole session (s) | ${f0(L.wallSeconds)} | ${f0(G.wallSeconds)} |`);
  const notes = [];
  if (L.rewrites) notes.push(`maintain asked OpenClaw for ${L.rewrites} transcript rewrite(s)`);
  if (c.compactReasons.length) notes.push(`compact's reasons when it did nothing: ${c.compactReasons.map((r) => JSON.stringify(r)).join(", ")}`);
  for (const p of [L, G]) {
    if (p.degradation.length) notes.push(`${p.slot}: ${p.degradation.length} degradation/quarantine line(s): ${p.degradation[0].slice(0, 200)}`);
    if (p.failed.length) notes.push(`${p.slot}: failed turns: ${p.failed.slice(0, 3).map((f) => f.slice(0, 200)).join("; ")}${p.failed.length > 3 ? " …" : ""}`);
  }
  if (notes.length) {
    out();
    for (const n of notes) out(`- ${n}`);
  }
  return lines.join("\n");
}

const pre = prerequisites();
if (!pre.ok) {
  process.stderr.write(`long-session-figures: ${pre.reason}\n`);
  process.exit(1);
}
const startLoad = fs.readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
const env = new OpenClawEnv({ name: "long-figures", openclaw: pre.openclaw });
let fake;
let code = 0;
try {
  fake = await startFakeModel({ logFile: path.join(env.root, "model-requests.jsonl"), contextLimitTokens: opts.contextWindow });
  const cfg = env.baseConfig({ fake, contextWindow: opts.contextWindow, gatewayPort: await freePort(), defaultTools: true });
  delete cfg.agents.defaults.skipBootstrap;
  env.writeConfig(cfg);
  const install = await env.install();
  if (install.code !== 0) throw new Error(`plugin install failed (${install.code}):\n${install.stdout}\n${install.stderr}`);
  const plan = planTurns({ turns: opts.turns, expandAt: opts.turns - 6, tag: "fig" });
  for (const t of plan) if (t.fileText) fs.writeFileSync(path.join(env.workspace, t.file), t.fileText);
  const stateL = {};
  scriptModel(fake, { plan, window: opts.contextWindow, workspace: env.workspace, state: stateL });
  const L = opts.only === "legacy" ? NOT_RUN : await phase(env, fake, "lossless", plan, stateL);
  const stateG = {};
  scriptModel(fake, { plan, window: opts.contextWindow, workspace: env.workspace, state: stateG });
  const G = opts.only === "lossless" ? NOT_RUN : await phase(env, fake, "legacy", plan, stateG);
  process.stdout.write(`\n${report(L, G)}\n`);
  if (opts.json) fs.writeFileSync(opts.json, JSON.stringify({ opts, startLoad, lossless: L, legacy: G }, null, 2) + "\n");
} catch (err) {
  process.stderr.write(`long-session-figures: ${err?.stack ?? err}\n`);
  code = 1;
} finally {
  await fake?.close();
  await env.cleanup();
}
process.exit(code);
