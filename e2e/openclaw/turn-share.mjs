#!/usr/bin/env node
// The engine's share of a real OpenClaw turn (issue 13, "Done when" 5).
//
//   node e2e/openclaw/turn-share.mjs [--turns N] [--context-window TOKENS] [--json FILE]
//
// Starts the fake model server and a real `openclaw gateway run` in an
// isolated HOME (as gateway.test.mjs does), the plugin installed with the
// README's command, and runs N real `openclaw agent` turns through the
// gateway with plugins.slots.contextEngine = "lossless"; the engine process
// is the real `lossless serve --stdio --timing FILE` (bridge.args; no
// recorder in between), which appends one line per request served:
// {method, startMs, ms, ok}, ms being the time inside the engine (host
// callbacks included). Then the gateway is restarted with the slot on
// "legacy" and the same N prompts run again in a fresh session.
//
// Per turn it records the wall time around the `openclaw agent` process (the
// CLI's own start-up included), the gateway-side run time OpenClaw reports
// (result.meta.durationMs), and the engine's ms: the requests that start
// inside the turn's CLI window, plus (reported apart) those that start after
// the CLI returned and before the next turn began (work the runtime finishes
// after the answer). One uncounted warm-up turn per phase (in its own
// session) comes first: the first turn through a fresh gateway loads the
// runtime (~30 s) and, for lossless, starts the engine process.
//
// The model answers at once (a fake server on 127.0.0.1), so the turn time
// here is OpenClaw's own overhead plus the engine; with a real model (seconds
// per call) the engine's share is far smaller: these shares are upper bounds.
//
// Needs Node >= 24.16 and OpenClaw 2026.9.6: without $OPENCLAW_ENTRY (or with
// an older Node) it runs .ci/openclaw-setup.sh (cache: $LOSSLESS_CI_CACHE,
// default ~/.cache/lossless-ci) and re-runs itself with that Node.
// $LOSSLESS_BIN is the engine binary (else `go build`). $LOSSLESS_E2E_KEEP=1
// keeps the temporary directory (OpenClaw state, logs, timing files).

import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO_ROOT = path.resolve(HERE, "../..");

// ---- arguments ------------------------------------------------------------

function parseArgs(argv) {
  const o = { turns: 12, contextWindow: 128_000, json: null };
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
    else if (a === "-h" || a === "--help") {
      process.stdout.write("usage: node e2e/openclaw/turn-share.mjs [--turns N (12)] [--context-window TOKENS (128000)] [--json FILE]\n");
      process.exit(0);
    } else throw new Error(`unknown argument ${a}`);
  }
  if (!Number.isInteger(o.turns) || o.turns < 1) throw new Error("--turns must be a positive integer");
  if (!Number.isInteger(o.contextWindow) || o.contextWindow < 4096) throw new Error("--context-window must be an integer >= 4096");
  return o;
}

let opts;
try {
  opts = parseArgs(process.argv.slice(2));
} catch (err) {
  process.stderr.write(`turn-share: ${err.message}\n`);
  process.exit(2);
}

// ---- Node 24 and OpenClaw from the cache ----------------------------------

function nodeOk() {
  const [a, b] = process.versions.node.split(".").map(Number);
  return a > 24 || (a === 24 && b >= 16);
}

if (!nodeOk() || !process.env.OPENCLAW_ENTRY) {
  if (process.env.LOSSLESS_TURN_SHARE_REEXEC === "1") {
    process.stderr.write(`turn-share: still no Node >= 24.16 / OpenClaw after .ci/openclaw-setup.sh (node ${process.version})\n`);
    process.exit(1);
  }
  const setup = spawnSync("bash", [path.join(REPO_ROOT, ".ci/openclaw-setup.sh")], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
  if (setup.status !== 0) {
    process.stderr.write("turn-share: .ci/openclaw-setup.sh failed\n");
    process.exit(1);
  }
  const env = { ...process.env, LOSSLESS_TURN_SHARE_REEXEC: "1" };
  for (const m of setup.stdout.matchAll(/^export ([A-Z_]+)=(.*)$/gm)) env[m[1]] = m[2].replace(/^'(.*)'$/, "$1");
  const r = spawnSync(env.LOSSLESS_NODE_BIN, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], { stdio: "inherit", env });
  process.exit(r.status ?? 1);
}

const { OpenClawEnv, prerequisites, freePort, degradationLines, parseJsonl } = await import("./harness.mjs");
const { startFakeModel } = await import("./fake-model.mjs");
const { filler } = await import("./text.mjs");

// ---- the conversation -------------------------------------------------------

// Paragraphs of a realistic working conversation (an engineer planning a
// service migration with the agent); each prompt is three or four of them
// plus its own question, 1.5-3 KB.
const PARAS = [
  "We are moving the billing service from the old VM fleet to the Kubernetes cluster in eu-west. The service has three parts: an HTTP API written in Go that takes invoice requests from the storefront, a worker that renders PDFs and emails them, and a nightly job that reconciles payments with the bank's settlement files. Today all three run on the same four VMs behind an HAProxy pair, and the database is a PostgreSQL 14 primary with one streaming replica.",
  "The constraints I have been given: no more than five minutes of API downtime in total, the nightly reconciliation must not run twice on the same settlement file, and the finance team needs the PDFs to keep the same numbering scheme (a yearly sequence per legal entity, no gaps). Security also wants the SMTP credentials out of the environment files and into the cluster's secret store, rotated once a quarter.",
  "My current plan is to run both deployments side by side for a week, send a growing share of API traffic to the cluster through the load balancer's weights (5%, 25%, 50%, 100%), and keep the worker and the nightly job on the VMs until the API is fully moved. The database stays where it is for this phase; the cluster reaches it over the private link we set up last quarter, which adds about 2 ms per round trip.",
  "One worry is the PDF numbering. The worker takes the next number with SELECT ... FOR UPDATE on a counters table, inside the same transaction that writes the invoice row. If two workers (one on a VM, one in the cluster) run at once, they will serialise on that row, which is fine for correctness but may hurt throughput at month end, when we render about 40,000 invoices in two hours.",
  "For observability we have Prometheus on the VMs scraping the services every 15 seconds, and Grafana dashboards that the on-call engineers know well. The cluster has its own Prometheus operator. I would like a single dashboard that shows both sides during the migration, labelled by where each request was served, so that we can compare latency and error rates at every traffic step.",
  "The nightly reconciliation job is the oldest part. It downloads the settlement file over SFTP, parses a fixed-width format, matches each line against open invoices by reference and amount, and marks them paid. It keeps its progress in a local SQLite file on the VM, which is why I do not want to move it before I understand what happens if it crashes halfway through a file.",
  "Rollback has to be simple: if the error rate of the cluster's API pods goes above 1% for five minutes, or p99 latency above 800 ms, the on-call engineer sets the load balancer weight back to zero and opens an incident. I want that written down as a runbook with the exact commands, because the people on call that week are not the ones who built the cluster.",
  "There are two external dependencies to check: the tax-rate service (called on every invoice, 50 ms p50, rate-limited to 200 requests per second per source IP) and the email provider, which allow-lists our sending IPs. The cluster egresses through a NAT gateway with two fixed addresses that are not on either list yet.",
  "Capacity: the VMs have 8 vCPUs and 16 GB each and run at about 30% CPU on a normal day, 70% at month end. The cluster's node pool has spare room for about 24 vCPUs. The API pods are configured with a 1 vCPU request and a 2 vCPU limit, and a horizontal autoscaler between 4 and 16 replicas on CPU.",
  "Testing so far: the API's integration tests pass against the cluster deployment in staging, and a load test at twice the normal month-end rate showed p99 of 310 ms with 8 replicas. We have not load-tested the worker, and we have not run the reconciliation job anywhere but on the VMs.",
  "The finance team has asked for a freeze during the last three working days of each month and the first two of the next, so the traffic steps have to fit between the 4th and the 25th. Audit also wants a record of every configuration change made during the migration, with who made it and when.",
  "The team is three backend engineers and one SRE, and the SRE is on holiday for the second week. Whatever we decide has to be something the backend engineers can operate on their own, with clear alerts and a rollback that does not need anybody to log in to a VM.",
];

const QUESTIONS = [
  "Given all that, what are the three biggest risks in this plan, and in what order would you address them?",
  "How should we handle the PDF numbering while workers run in both places? Please weigh a sequence per worker against the current locking.",
  "Can you draft the traffic-step schedule (dates, weights, what we check before each step) that fits the freeze windows?",
  "What should the rollback runbook say, step by step, for the API? Keep it short enough to read during an incident.",
  "How would you make the reconciliation job safe to restart halfway through a settlement file before we move it?",
  "What do we need to change for the tax-rate service's per-IP rate limit once traffic comes from the NAT gateway?",
  "Please propose the alerts (name, expression, threshold, for how long) that the on-call engineers should get during the migration.",
  "Is the autoscaler configuration sensible for month end? What would you change, and how would we test it before the real month end?",
  "How should we move the SMTP credentials into the secret store and rotate them without a window where emails fail?",
  "What is the minimum audit trail that satisfies the request for a record of every configuration change?",
  "Summarise the decisions we have made so far in this conversation as a short list I can paste into the migration document.",
  "What would you check in the first hour after moving 100% of the API traffic, before we call the phase done?",
];

/** Prompt i (0-based): three or four paragraphs and a question, the same in both phases. */
function prompt(i) {
  const n = 3 + (i % 2);
  const paras = [];
  for (let k = 0; k < n; k++) paras.push(PARAS[(i * 5 + k * 7) % PARAS.length]);
  return `${paras.join("\n\n")}\n\n${QUESTIONS[i % QUESTIONS.length]} (turn ${i + 1})`;
}

/** Turns whose first model answer is a tool call (read of the workspace notes), then text. */
const isToolTurn = (i) => i % 4 === 2;
const NOTES_FILE = "migration-notes.md";
const NOTES = `# Migration notes\n\n${PARAS.join("\n\n")}\n\n## Log\n\n${filler(4000, 7, 100)}\n`;

/** The model's answer to turn i: a few paragraphs, as a real model would write. */
const reply = (i) => `Here is how I would approach it.\n\n${filler(900, 100 + i)}\n\n${filler(700, 200 + i)}\n\nIn short: ${filler(200, 300 + i)}`;

// ---- statistics ---------------------------------------------------------------

const sorted = (xs) => [...xs].sort((a, b) => a - b);
function quantile(xs, q) {
  if (!xs.length) return NaN;
  const s = sorted(xs);
  const pos = (s.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return s[lo] + (s[hi] - s[lo]) * (pos - lo);
}
const median = (xs) => quantile(xs, 0.5);
const sum = (xs) => xs.reduce((a, b) => a + b, 0);
const f0 = (x) => (Number.isFinite(x) ? x.toFixed(0) : "—");
const f1 = (x) => (Number.isFinite(x) ? x.toFixed(1) : "—");
const f2 = (x) => (Number.isFinite(x) ? x.toFixed(2) : "—");
const pct = (x) => (Number.isFinite(x) ? `${(100 * x).toFixed(2)}%` : "—");

// ---- one phase ------------------------------------------------------------------

const METHOD_ORDER = ["bootstrap", "maintain", "assemble", "commitTurn", "compact"];

async function runPhase(env, fake, slot, tag) {
  const timingFile = path.join(env.root, `timing-${slot}.jsonl`);
  env.selectEngine(slot, {
    storeDir: env.storeDir,
    bridge: { command: env.realBin, args: ["serve", "--stdio", "--timing", timingFile] },
  });
  const logFrom = env.gatewayOutput().length;
  const gw = await env.startGateway();
  process.stderr.write(`turn-share: ${slot}: gateway ready in ${(gw.readyMs / 1000).toFixed(1)} s\n`);
  const problems = [];

  const one = async (sessionKey, i, label) => {
    fake.enqueue(...(isToolTurn(i) ? [{ toolCall: { name: "read", arguments: { path: path.join(env.workspace, NOTES_FILE) } } }] : []), { text: reply(i) });
    const t = await env.turn({ sessionKey, message: prompt(i) });
    if (t.code !== 0) problems.push(`${label}: openclaw agent exited ${t.code}: ${t.stderr.slice(-800)}`);
    if (fake.queued) {
      problems.push(`${label}: ${fake.queued} scripted model answer(s) left unused`);
      await fetch(`${fake.url}/_control/reset`, { method: "POST", body: "{}" });
    }
    const result = t.json?.result ?? t.json;
    const meta = result?.meta ?? {};
    return {
      i,
      tool: isToolTurn(i),
      startedAt: t.startedAt,
      endedAt: t.endedAt,
      wallMs: t.endedAt - t.startedAt,
      gatewayMs: typeof meta.durationMs === "number" ? meta.durationMs : null,
      metaKeys: Object.keys(meta),
      code: t.code,
    };
  };

  const warm = await one(`agent:main:share-${tag}-warmup`, 0, `${slot} warm-up`);
  process.stderr.write(`turn-share: ${slot}: warm-up turn ${(warm.wallMs / 1000).toFixed(1)} s\n`);
  const turns = [];
  for (let i = 0; i < opts.turns; i++) {
    const t = await one(`agent:main:share-${tag}`, i, `${slot} turn ${i + 1}`);
    turns.push(t);
    process.stderr.write(
      `turn-share: ${slot}: turn ${i + 1}/${opts.turns}${t.tool ? " (tool)" : ""} ${t.wallMs} ms` + (t.gatewayMs != null ? ` (gateway ${t.gatewayMs} ms)` : "") + "\n",
    );
  }
  const endedAt = Date.now();
  await env.stopGateway();
  const deg = degradationLines(env.gatewayOutput().slice(logFrom));
  if (deg.length) problems.push(`OpenClaw degraded or quarantined the engine:\n${deg.join("\n")}`);

  // The engine's requests, by turn.
  const timing = fs.existsSync(timingFile) ? parseJsonl(fs.readFileSync(timingFile, "utf8")).filter((r) => r && typeof r.method === "string") : [];
  for (let k = 0; k < turns.length; k++) {
    const t = turns[k];
    const next = k + 1 < turns.length ? turns[k + 1].startedAt : endedAt;
    t.inside = timing.filter((r) => r.startMs >= t.startedAt && r.startMs <= t.endedAt);
    t.after = timing.filter((r) => r.startMs > t.endedAt && r.startMs < next);
    t.engineMs = sum(t.inside.map((r) => r.ms));
    t.afterMs = sum(t.after.map((r) => r.ms));
    t.failed = t.inside.concat(t.after).filter((r) => !r.ok).length;
  }
  if (slot === "lossless") {
    for (const t of turns) {
      if (!t.inside.some((r) => r.method === "assemble")) problems.push(`lossless turn ${t.i + 1}: no assemble served inside the turn`);
      if (![...t.inside, ...t.after].some((r) => r.method === "commitTurn")) problems.push(`lossless turn ${t.i + 1}: no commitTurn served for the turn`);
    }
  }
  return { slot, warm, turns, timing, problems, gatewayReadyMs: gw.readyMs };
}

// ---- report -------------------------------------------------------------------------

function report(L, G) {
  const lines = [];
  const out = (s = "") => lines.push(s);
  const wall = (p) => p.turns.map((t) => t.wallMs);
  const gwMs = (p) => p.turns.map((t) => t.gatewayMs).filter((x) => x != null);
  const haveGw = gwMs(L).length === L.turns.length && gwMs(G).length === G.turns.length;
  const eng = L.turns.map((t) => t.engineMs);
  const engAll = L.turns.map((t) => t.engineMs + t.afterMs);

  out(`turns: ${opts.turns} per engine (${L.turns.filter((t) => t.tool).length} with a tool call: read of a ${(NOTES.length / 1024).toFixed(1)} KB file), prompts ${f1(median(L.turns.map((t) => prompt(t.i).length)) / 1024)} KB median, one session per engine, after one uncounted warm-up turn; context window ${opts.contextWindow}`);
  out(`machine: ${process.platform} ${os.cpus().length} cores, Node ${process.version}, load at start ${startLoad}`);
  out();
  out("| per turn (ms) | lossless median | lossless p90 | legacy median | legacy p90 | lossless − legacy (median) |");
  out("|---|---|---|---|---|---|");
  out(`| wall time of \`openclaw agent\` (CLI start-up included) | ${f0(median(wall(L)))} | ${f0(quantile(wall(L), 0.9))} | ${f0(median(wall(G)))} | ${f0(quantile(wall(G), 0.9))} | ${f0(median(wall(L)) - median(wall(G)))} |`);
  if (haveGw)
    out(`| gateway-side run (result.meta.durationMs) | ${f0(median(gwMs(L)))} | ${f0(quantile(gwMs(L), 0.9))} | ${f0(median(gwMs(G)))} | ${f0(quantile(gwMs(G), 0.9))} | ${f0(median(gwMs(L)) - median(gwMs(G)))} |`);
  out();
  out(`engine (lossless, from \`serve --timing\`), per turn: median ${f1(median(eng))} ms, p90 ${f1(quantile(eng, 0.9))} ms inside the CLI window; with work started after the CLI returned: median ${f1(median(engAll))} ms`);
  const shareWall = L.turns.map((t) => t.engineMs / t.wallMs);
  out(`share of the turn: median ${pct(median(shareWall))} of the wall time (p90 ${pct(quantile(shareWall, 0.9))}); median engine ms / median wall ms = ${pct(median(eng) / median(wall(L)))}`);
  if (haveGw) {
    const shareGw = L.turns.map((t) => t.engineMs / t.gatewayMs);
    out(`share of the gateway-side run: median ${pct(median(shareGw))} (p90 ${pct(quantile(shareGw, 0.9))})`);
  } else {
    out(`gateway-side time: not in OpenClaw's JSON result (meta keys: ${[...new Set(L.turns.flatMap((t) => t.metaKeys))].join(", ") || "none"})`);
  }
  out();
  out("| method | calls per turn (median) | ms per call median | ms per call p90 | ms per turn median | calls after the CLI returned |");
  out("|---|---|---|---|---|---|");
  const methods = [...new Set(L.turns.flatMap((t) => [...t.inside, ...t.after].map((r) => r.method)))];
  methods.sort((a, b) => (METHOD_ORDER.indexOf(a) + 1 || 99) - (METHOD_ORDER.indexOf(b) + 1 || 99) || a.localeCompare(b));
  for (const m of [...new Set([...METHOD_ORDER, ...methods])]) {
    const per = L.turns.map((t) => [...t.inside, ...t.after].filter((r) => r.method === m));
    const calls = per.flat();
    if (!calls.length) {
      out(`| ${m} | 0 | — | — | — | — |`);
      continue;
    }
    out(
      `| ${m} | ${f1(median(per.map((c) => c.length)))} | ${f2(median(calls.map((r) => r.ms)))} | ${f2(quantile(calls.map((r) => r.ms), 0.9))} | ${f2(median(per.map((c) => sum(c.map((r) => r.ms)))))} | ${L.turns.reduce((a, t) => a + t.after.filter((r) => r.method === m).length, 0)} |`,
    );
  }
  const outside = L.timing.length - L.turns.reduce((a, t) => a + t.inside.length + t.after.length, 0);
  out();
  out(`engine requests outside the counted turns (warm-up turn: initialize, the first bootstrap, ...): ${outside}, ${f1(sum(L.timing.map((r) => r.ms)) - sum(engAll))} ms`);
  out(`warm-up turn (uncounted): lossless ${f0(L.warm.wallMs)} ms, legacy ${f0(G.warm.wallMs)} ms; gateway ready in ${f0(L.gatewayReadyMs)} / ${f0(G.gatewayReadyMs)} ms`);
  if (G.timing.length) out(`legacy phase: the engine process served ${G.timing.length} request(s) (${[...new Set(G.timing.map((r) => r.method))].join(", ")})`);
  const failed = L.turns.reduce((a, t) => a + t.failed, 0);
  if (failed) out(`engine requests that failed: ${failed}`);
  out();
  out("| turn | tool | lossless wall ms | lossless gateway ms | engine ms | engine ms after CLI | legacy wall ms | legacy gateway ms |");
  out("|---|---|---|---|---|---|---|---|");
  for (let k = 0; k < L.turns.length; k++) {
    const a = L.turns[k];
    const b = G.turns[k];
    out(`| ${k + 1} | ${a.tool ? "read" : ""} | ${a.wallMs} | ${a.gatewayMs ?? "—"} | ${f1(a.engineMs)} | ${f1(a.afterMs)} | ${b?.wallMs ?? "—"} | ${b?.gatewayMs ?? "—"} |`);
  }
  return lines.join("\n");
}

// ---- main -------------------------------------------------------------------------------

const pre = prerequisites();
if (!pre.ok) {
  process.stderr.write(`turn-share: ${pre.reason}\n`);
  process.exit(1);
}
const startLoad = fs.readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");

const env = new OpenClawEnv({ name: "turn-share", openclaw: pre.openclaw });
let fake;
let code = 0;
try {
  fake = await startFakeModel({ logFile: path.join(env.root, "model-requests.jsonl") });
  env.writeConfig(env.baseConfig({ fake, contextWindow: opts.contextWindow, gatewayPort: await freePort() }));
  const install = await env.install();
  if (install.code !== 0) throw new Error(`plugin install failed (${install.code}):\n${install.stdout}\n${install.stderr}`);
  fs.writeFileSync(path.join(env.workspace, NOTES_FILE), NOTES);

  const L = await runPhase(env, fake, "lossless", "lossless");
  const G = await runPhase(env, fake, "legacy", "legacy");

  const text = report(L, G);
  process.stdout.write(`\n${text}\n`);
  const problems = [...L.problems, ...G.problems];
  if (problems.length) {
    process.stdout.write(`\nproblems (the figures above may not be valid):\n- ${problems.join("\n- ")}\n`);
    code = 1;
  }
  if (opts.json) {
    const strip = (p) => ({ ...p, turns: p.turns.map(({ inside, after, ...t }) => ({ ...t, inside: inside.length, after: after.length })) });
    fs.writeFileSync(opts.json, JSON.stringify({ opts, startLoad, lossless: strip(L), legacy: strip(G), problems }, null, 2) + "\n");
  }
} catch (err) {
  process.stderr.write(`turn-share: ${err?.stack ?? err}\n`);
  code = 1;
} finally {
  await fake?.close();
  await env.cleanup();
}
process.exit(code);
