// The long session of issue 26, shared by long-session.test.mjs (the
// assertions) and long-session-figures.mjs (the README's figures): the
// turns, the fake model's scripted behaviour, the runner, and the readers
// of what happened (requests, overflows, compactions by whom, the budgets
// the engine received, each call attributed to its turn).
//
// The scenario, as a new user would run it: the plugin installed by the
// README's command, the default plugin config, OpenClaw's default tool
// settings (no `tools` section: tool search on, plugin tools deferred), a
// real gateway and `openclaw agent` turns through it, the fake model
// enforcing the window (400 context_length_exceeded above it, by its own
// estimate: characters of messages + tools / 4). Turns: notes of 3-8 KB,
// short questions, a `read` of a 6-11 KB workspace file every 5th turn (the
// model's tool call is scripted), and one turn where the model expands a
// summary with lcm_expand through whatever path the runtime offers (a
// direct call when the request lists the tool, else tool_search then
// tool_call, OpenClaw 2026.9.6's default "tools" mode).

import fs from "node:fs";
import path from "node:path";
import { transportMessageChars, transportToolsChars, transportTokens } from "./fake-model.mjs";
import { chatRequests, contentText, parseJsonl, summaryIds, degradationLines, jsonEqual, RECALL_OPEN } from "./harness.mjs";
import { filler } from "./text.mjs";

const pad = (n) => String(n).padStart(2, "0");
export const marker = (i) => `LS-T${pad(i)}`;
const MARKER_RE = /LS-T(\d\d):/;
// A turn's prompt as the model sees it: the marker first (after OpenClaw's "[Fri 2026-12-04 05:20 UTC] " prefix).
const PROMPT_RE = /^(?:\[[^\]\n]*\]\s*)?LS-T(\d\d):/;

// OpenClaw's compaction safeguard (legacy's compaction) audits a summary:
// these five sections, the conversation's opaque identifiers verbatim (its
// extractOpaqueIdentifiers, at most 12: we list every match), the latest
// unresolved request first under "## Pending user asks", the latest ask
// reflected in the text. A fake that answers anything less fails every
// preflight compaction, which is not what a real model does.
const SUMMARY_SECTIONS = ["## Decisions", "## Open TODOs", "## Constraints/Rules", "## Pending user asks", "## Exact identifiers"];
const IDENTIFIER_RE =
  /(https?:\/\/\S+|(?<![A-Za-z0-9._-])\/[\w.-]{2,}(?:\/[\w.-]+)+|(?<![A-Za-z0-9._-])[A-Za-z0-9._-]+\.[A-Za-z0-9._/-]+:\d{1,5})|(?<![A-Za-z0-9_-])(?=[A-Za-z0-9_-]*(?:[A-Fa-f0-9]{8,}|\d{6,}))([A-Za-z0-9_-]+)|(?<![A-Za-z0-9])(\d+\.\d+[A-Za-z]*)(?![A-Za-z0-9])/g;

/** The answer to a summarization request (no tools: OpenClaw's own compaction, e.g. under legacy), in the form its safeguard accepts. */
export function summaryText(body) {
  const text = (body.messages ?? []).map((m) => contentText(m.content)).join("\n");
  const ids = new Set();
  for (const m of text.matchAll(IDENTIFIER_RE)) {
    const v = (m[1] ?? m[2] ?? m[3] ?? "").trim().replace(/^[("'`[{<]+/, "").replace(/[)\]"'`,;:.!?<>]+$/, "");
    if (v.length >= 4) ids.add(v);
  }
  const latest = /Latest unresolved user request[^\n]*\n<untrusted-text>\n([\s\S]*?)\n<\/untrusted-text>/.exec(text)?.[1];
  const asks = [...text.matchAll(/\[User\]: ([^\n]*)/g)].map((m) => m[1]);
  const body_ = {
    "## Decisions": `- The user records notes and file contents; the latest ask: ${(asks.at(-1) ?? "none").slice(0, 400)}`,
    "## Open TODOs": "- Keep recording notes and answer questions about them.",
    "## Constraints/Rules": "- Notes are labelled LS-Tnn; files are workspace logs.",
    "## Pending user asks": latest ? `Latest user request context: ${JSON.stringify(latest)}` : "none",
    "## Exact identifiers": ids.size ? [...ids].map((v) => `- ${v}`).join("\n") : "- none",
  };
  return SUMMARY_SECTIONS.map((h) => `${h}\n${body_[h]}`).join("\n\n");
}

/** Token-dense log lines (timestamps, hex ids, numbers): ~3.5 characters a token, so a 10 KB file is well over maintain's 2,000-token default. */
export function logText(chars, seed) {
  let s = seed >>> 0;
  const next = () => (s = (Math.imul(s ^ (s >>> 15), 2246822519) + 0x9e3779b9) >>> 0);
  const lines = [];
  let n = 0;
  let len = 0;
  while (len < chars) {
    n++;
    const t = new Date(Date.UTC(2026, 8, 6, 8, 0, 0) + n * 7919 * 1000).toISOString().slice(0, 19);
    const line = `${String(n).padStart(4, "0")} ${t}Z node-${pad(next() % 32)} id=${next().toString(16).padStart(8, "0")} q=${next() % 9973} lat=${(next() % 100000) / 100}ms ${filler(60, next())}`;
    lines.push(line);
    len += line.length + 1;
  }
  return lines.join("\n").slice(0, chars).trimEnd() + "\n";
}

const QUESTIONS = [
  "Quick question: which of my notes so far was the longest?",
  "What is the one thing from the last note I should not forget?",
  "Short answer please: are we still on track?",
  "Which file did you read last, and what was in it, in a line?",
  "Remind me in one sentence what this session is about.",
  "Anything in the notes that contradicts an earlier one?",
];

/**
 * The turns: [{i, kind: "note" | "question" | "read" | "expand", message,
 * file?, fileText?}]. Notes of noteMin..noteMax characters, a read every
 * `readEvery` turns (file sizes cycling through readSizes), the expand turn
 * at `expandAt` (0: none).
 */
export function planTurns({ turns, expandAt = 0, noteMin = 3000, noteMax = 8000, readEvery = 5, readSizes = [10_800, 6_200, 9_800, 7_400, 11_000, 8_200, 6_800, 10_400], tag = "ls" }) {
  const out = [];
  let reads = 0;
  for (let i = 1; i <= turns; i++) {
    const m = marker(i);
    if (i === expandAt) {
      out.push({ i, kind: "expand", message: `${m}: Please expand the earliest summary of this conversation (lcm_expand) and tell me what it covers.` });
    } else if (readEvery > 0 && i % readEvery === 0) {
      const size = readSizes[reads % readSizes.length];
      const file = `${tag}-log-${pad(i)}.txt`;
      const fileText = `FILE ${file} (${m}) begins.\n${logText(size - 80, 1000 + i)}FILE ${file} ends.\n`;
      reads++;
      out.push({ i, kind: "read", file, fileText, message: `${m}: Please read the file ${file} in the workspace and tell me in two lines what it shows.` });
    } else if (i % 5 === 3) {
      out.push({ i, kind: "question", message: `${m}: ${QUESTIONS[i % QUESTIONS.length]}` });
    } else {
      const size = noteMin + ((i * 2971) % (noteMax - noteMin + 1));
      out.push({ i, kind: "note", message: `${m}: A note for the record (${(size / 1024).toFixed(1)} KB). ${filler(size, 500 + i)}` });
    }
  }
  return out;
}

/** The model's text answer to turn i: a short paragraph, as a real model would write. */
export const replyText = (i) => `Understood (${marker(i)}). ${filler(300 + ((i * 397) % 700), 900 + i)}`;

/** The index of the turn's prompt: the last user message naming a turn (OpenClaw appends an internal-context user message after it; recall blocks quote older turns). */
export function promptIndex(msgs) {
  for (let k = msgs.length - 1; k >= 0; k--) {
    const m = msgs[k];
    if (m?.role !== "user") continue;
    const t = contentText(m.content);
    if (PROMPT_RE.test(t) && !t.includes(RECALL_OPEN) && !t.includes("<lcm_summary")) return k;
  }
  return -1;
}

/**
 * The fake model's behaviour for a plan: a rule for every request that fits
 * the window (a request over it still gets the automatic overflow answer).
 * state.expandId is the summary id the expand turn asks for (set by the
 * runner before that turn); state.expandPath records how it was reached.
 */
export function scriptModel(fake, { plan, window, workspace, state, expandMaxTokens = 1500 }) {
  const byTurn = new Map(plan.map((t) => [t.i, t]));
  const respond = (body) => {
    if (!(body.tools?.length > 0)) return { text: summaryText(body) }; // a summarization call, not a turn of the session
    const msgs = body.messages ?? [];
    const u = promptIndex(msgs);
    const hit = u >= 0 ? PROMPT_RE.exec(contentText(msgs[u].content)) : null;
    const t = hit ? byTurn.get(Number(hit[1])) : null;
    if (!t) return { text: "Noted." };
    const after = msgs.slice(u + 1);
    const calls = after.filter((m) => m.role === "assistant" && m.tool_calls?.length).flatMap((m) => m.tool_calls);
    const tools = new Set((body.tools ?? []).map((x) => x.function?.name));
    if (t.kind === "read" && calls.length === 0) return { toolCall: { name: "read", arguments: { path: path.join(workspace, t.file) } } };
    if (t.kind === "expand" && state.expandId) {
      const args = { id: state.expandId, maxTokens: expandMaxTokens };
      if (calls.length === 0) {
        if (tools.has("lcm_expand")) {
          state.expandPath = "direct";
          return { toolCall: { name: "lcm_expand", arguments: args } };
        }
        if (tools.has("tool_search")) {
          state.expandPath = "tool_search+tool_call";
          return { toolCall: { name: "tool_search", arguments: { query: "lcm_expand" } } };
        }
        state.expandPath = `neither lcm_expand nor tool_search in the request's tools (${[...tools].join(", ")})`;
      } else if (calls.length === 1 && calls[0].function?.name === "tool_search") {
        // The search result names the tool's id: call it through tool_call.
        const res = after.filter((m) => m.role === "tool").map((m) => contentText(m.content)).join("\n");
        const id = /"id"\s*:\s*"([^"]*lcm_expand[^"]*)"/.exec(res)?.[1] ?? /"id\\?"\s*:\s*\\?"([^"\\]*lcm_expand[^"\\]*)/.exec(res)?.[1] ?? "lcm_expand";
        state.expandCallId = id;
        return { toolCall: { name: "tool_call", arguments: { id, args } } };
      }
    }
    return { text: replyText(t.i) };
  };
  // Every request: the fake model checks the window before any rule, so an
  // oversized request still gets the overflow answer.
  fake.setRules([{ when: () => true, response: respond }]);
}

// ---- the run ------------------------------------------------------------------

/** Sizes of every recorded stream now: {dir: {stdin, stdout}} (a mark between turns). */
export function trafficMark(env) {
  const out = {};
  for (const s of env.starts()) {
    const size = (f) => (fs.existsSync(path.join(s.dir, f)) ? fs.statSync(path.join(s.dir, f)).size : 0);
    out[s.dir] = { stdin: size("stdin.jsonl"), stdout: size("stdout.jsonl") };
  }
  return out;
}

/** Whether a turn failed: the CLI's exit, the run's status, or an error text in place of an answer. */
export function turnFailure(t) {
  if (t.code !== 0) {
    const err = (t.stderr ?? "").trim().split("\n").filter((l) => l && !/^\[openclaw\] (Debug|Try|Help):/.test(l)).slice(-2).join(" | ");
    const payload = (t.json?.result?.payloads ?? []).map((p) => p.text ?? "").join(" ").trim();
    return `exit ${t.code}: ${(err || payload || JSON.stringify(t.json) || (t.stdout ?? "").trim().split("\n").slice(-2).join(" | ") || "no output").slice(0, 300)}`;
  }
  const status = t.json?.status;
  if (status && status !== "ok") return `status ${status}`;
  const meta = t.json?.result?.meta ?? {};
  if (meta.error) return `meta.error ${JSON.stringify(meta.error).slice(0, 300)}`;
  if (/context overflow|prompt too large|context_length_exceeded|maximum context length|exhausted/i.test(t.text ?? "")) return `answer: ${t.text.slice(0, 300)}`;
  if (!(t.text ?? "").trim()) return "empty answer";
  return null;
}

/**
 * Runs the plan's turns in one session through the running gateway. Before
 * the expand turn, state.expandId is set to the earliest summary id of the
 * newest request of this run that holds one (expand false: none, the model
 * then answers that turn with text). Returns [{...plan turn, turn record,
 * failure, mark (traffic sizes before the turn), firstSeq (the first model
 * request of the turn)}].
 */
export async function runTurns(env, fake, { plan, sessionKey, state, onTurn, expand = true, restartAfter = 0 }) {
  const out = [];
  const fromSeq = (chatRequests(fake).at(-1)?.seq ?? 0) + 1;
  for (const p of plan) {
    if (restartAfter > 0 && p.i === restartAfter + 1) {
      const gw = await env.restartGateway();
      state.restartedAt = { beforeTurn: p.i, readyMs: gw.readyMs };
    }
    if (p.kind === "expand") {
      const withSummary = chatRequests(fake).filter((r) => r.seq >= fromSeq && summaryIds(r).length);
      state.expandId = expand && withSummary.length ? summaryIds(withSummary.at(-1))[0] : null;
    }
    const mark = trafficMark(env);
    const firstSeq = (chatRequests(fake).at(-1)?.seq ?? 0) + 1;
    const t = await env.turn({ sessionKey, message: p.message });
    t.stdout = env.commands.at(-1)?.stdout ?? "";
    const rec = { ...p, fileText: undefined, turn: t, failure: turnFailure(t), mark, firstSeq };
    out.push(rec);
    onTurn?.(rec);
  }
  return out;
}

// ---- reading the traffic ------------------------------------------------------------

function linesWithOffsets(file) {
  if (!fs.existsSync(file)) return [];
  const raw = fs.readFileSync(file);
  const out = [];
  let start = 0;
  for (;;) {
    const nl = raw.indexOf(10, start);
    if (nl < 0) break;
    const text = raw.subarray(start, nl).toString("utf8");
    if (text.trim()) {
      try {
        out.push({ offset: start, msg: JSON.parse(text) });
      } catch {}
    }
    start = nl + 1;
  }
  return out;
}

/**
 * Every plugin -> engine call and engine -> plugin callback, in order, each
 * with the index (into `turns`) of the turn it belongs to: the last turn
 * that started before the call was written (-1: before the first turn).
 * [{dir, stream, offset, turn, method, id, params, result, error, answered}]
 */
export function attributedTraffic(env, turns) {
  const turnOf = (dir, stream, offset) => {
    let k = -1;
    for (let j = 0; j < turns.length; j++) if ((turns[j].mark[dir]?.[stream] ?? 0) <= offset) k = j;
    return k;
  };
  const calls = [];
  const callbacks = [];
  for (const s of env.starts()) {
    const stdin = linesWithOffsets(path.join(s.dir, "stdin.jsonl"));
    const stdout = linesWithOffsets(path.join(s.dir, "stdout.jsonl"));
    const answers = new Map(stdout.filter((l) => l.msg.method === undefined && l.msg.id !== undefined).map((l) => [l.msg.id, l.msg]));
    const hostAnswers = new Map(stdin.filter((l) => l.msg.method === undefined && l.msg.id !== undefined).map((l) => [l.msg.id, l.msg]));
    for (const l of stdin) {
      if (typeof l.msg.method !== "string" || l.msg.id === undefined) continue;
      const a = answers.get(l.msg.id);
      calls.push({ dir: s.dir, stream: "stdin", offset: l.offset, turn: turnOf(s.dir, "stdin", l.offset), method: l.msg.method, id: l.msg.id, params: l.msg.params, result: a?.result, error: a?.error, answered: Boolean(a) });
    }
    for (const l of stdout) {
      if (typeof l.msg.method !== "string" || l.msg.id === undefined) continue;
      const a = hostAnswers.get(l.msg.id);
      callbacks.push({ dir: s.dir, stream: "stdout", offset: l.offset, turn: turnOf(s.dir, "stdout", l.offset), method: l.msg.method, id: l.msg.id, params: l.msg.params, result: a?.result, error: a?.error, answered: Boolean(a) });
    }
  }
  return { calls, callbacks };
}

/** The figures the engine was given, one object per assemble / commitTurn / compact call of turns [0, maxTurns); a figure the call did not carry is left out. */
export function budgetSequence(calls, turns, maxTurns = 12) {
  const out = [];
  for (const c of calls) {
    if (c.turn < 0 || c.turn >= maxTurns) continue;
    const p = c.params ?? {};
    const turn = turns[c.turn].i;
    if (c.method === "assemble") {
      const lim = p.runtimeSettings?.limits ?? {};
      out.push({
        call: "assemble",
        turn,
        tokenBudget: p.tokenBudget ?? null,
        limits: { promptTokenBudget: lim.promptTokenBudget ?? null, maxOutputTokens: lim.maxOutputTokens ?? null },
        prompt: typeof p.prompt === "string" && p.prompt.length > 0,
        messages: (p.messages ?? []).length,
      });
    } else if (c.method === "commitTurn") {
      const rc = p.runtimeContext ?? {};
      out.push({ call: "commitTurn", turn, tokenBudget: rc.tokenBudget ?? null, modelContextWindow: rc.modelContextWindow ?? null });
    } else if (c.method === "compact") {
      out.push({ call: "compact", turn, tokenBudget: p.tokenBudget ?? null, currentTokenCount: p.currentTokenCount ?? null, force: Boolean(p.force) });
    }
  }
  const drop = (o) => {
    for (const [k, v] of Object.entries(o)) {
      if (v == null) delete o[k];
      else if (typeof v === "object") drop(v);
    }
    return o;
  };
  return out.map(drop);
}

/** The engine's store: `lossless stats --json` summary count for the agent (null when unreadable). */
export function storeSummaryCount(env) {
  const r = env.lossless(["stats", "--json"]);
  if (r.code !== 0) return { count: null, error: r.stderr.trim() };
  let j;
  try {
    j = JSON.parse(r.stdout);
  } catch {
    return { count: null, error: `unparsable stats: ${r.stdout.slice(0, 200)}` };
  }
  const find = (o) => {
    if (!o || typeof o !== "object") return null;
    for (const [k, v] of Object.entries(o)) if (/^summaries$/i.test(k) && typeof v === "number") return v;
    for (const v of Object.values(o)) {
      const x = find(v);
      if (x != null) return x;
    }
    return null;
  };
  return { count: find(j), raw: j };
}

/** Summary ids inside assemble results ("<lcm_summary id=..."), in the order first returned, with the call index. */
export function assembledSummaryIds(calls) {
  const first = new Map();
  calls.forEach((c, k) => {
    if (c.method !== "assemble") return;
    for (const m of c.result?.messages ?? []) {
      const re = /<lcm_summary id="([^"]+)"/g;
      let x;
      const t = contentText(m.content);
      while ((x = re.exec(t))) if (!first.has(x[1])) first.set(x[1], k);
    }
  });
  return first;
}

/**
 * Who made the summaries: compact calls report theirs
 * (result.result.details.newSummaryIds); every other summary of the store
 * was made by the engine on its own (background compaction after
 * commitTurn, or maintain).
 */
export function compactionFigures(env, calls) {
  const compacts = calls.filter((c) => c.method === "compact");
  const byCompact = new Set();
  let compacted = 0;
  let nothing = 0;
  let failed = 0;
  for (const c of compacts) {
    if (c.error || !c.answered) {
      failed++;
      continue;
    }
    if (c.result?.compacted) compacted++;
    else nothing++;
    for (const id of c.result?.result?.details?.newSummaryIds ?? []) byCompact.add(id);
  }
  const assembled = assembledSummaryIds(calls);
  const firstCompact = calls.findIndex((c) => c.method === "compact");
  const beforeAnyCompact = [...assembled].filter(([, k]) => firstCompact < 0 || k < firstCompact).map(([id]) => id);
  const store = storeSummaryCount(env);
  const ownSeen = [...assembled.keys()].filter((id) => !byCompact.has(id));
  return {
    compactCalls: compacts.length,
    compactCompacted: compacted,
    compactNothing: nothing,
    compactFailed: failed,
    compactReasons: [...new Set(compacts.filter((c) => c.result && !c.result.compacted).map((c) => c.result.reason ?? ""))],
    summariesByCompact: byCompact.size,
    storeSummaries: store.count,
    storeError: store.error,
    summariesByEngine: store.count == null ? null : store.count - byCompact.size,
    ownSummaryIdsAssembled: ownSeen,
    summaryIdsBeforeAnyCompact: beforeAnyCompact,
  };
}

/** Model requests of one session's turns (the last user message names one of its turns). */
export function sessionRequests(fake, turns) {
  const first = turns[0]?.firstSeq ?? 1;
  const lastTurn = turns.at(-1);
  return chatRequests(fake).filter((r) => r.seq >= first && (lastTurn == null || r.time <= lastTurn.turn.endedAt + 1000));
}

/** Overflow answers and the requests over the window among `reqs` (by the fake model's o200k_base count of the prompt; the chars / 4 estimate beside it). */
export function overflowFigures(reqs, window) {
  const overflows = reqs.filter((r) => r.response?.kind === "overflow");
  const promptOf = (r) => r.tokens?.prompt ?? 0;
  const over = reqs.filter((r) => promptOf(r) > window);
  const largest = reqs.reduce((a, r) => (promptOf(r) > (a ? promptOf(a) : -1) ? r : a), null);
  return {
    requests: reqs.length,
    overflows: overflows.length,
    overWindow: over.length,
    largest: largest ? promptOf(largest) : 0,
    largestChars4: largest?.approxTokens ?? 0,
    largestSeq: largest?.seq ?? null,
    overSeqs: over.map((r) => `#${r.seq} ${promptOf(r)} tokens (chars/4 ~${r.approxTokens})`),
  };
}

/** The turn a request belongs to (index into turns), by its position in the log. */
export function requestTurn(turns, r) {
  let k = -1;
  for (let j = 0; j < turns.length; j++) if (turns[j].firstSeq <= r.seq) k = j;
  return k;
}

/**
 * Compares OpenClaw's transcript with the engine's store (lossless export),
 * message by message (JSON-equal; a tool result maintain replaced by a
 * reference in OpenClaw's transcript is compared with the original event).
 * Returns a list of problems.
 */
export function compareStored(tr, exp, { label = "" } = {}) {
  const problems = [];
  if (exp.messages.length !== tr.messages.length) problems.push(`${label}OpenClaw's transcript has ${tr.messages.length} messages, lossless export ${exp.messages.length}`);
  const originals = tr.all.filter((e) => e.type === "message" && e.message && !JSON.stringify(e.message).includes("lcm-large:"));
  const n = Math.max(exp.messages.length, tr.messages.length);
  for (let i = 0; i < n; i++) {
    let a = tr.messages[i];
    const b = exp.messages[i];
    if (a && JSON.stringify(a).includes("lcm-large:") && a.toolCallId) {
      const orig = originals.find((e) => e.message.toolCallId === a.toolCallId && e.message.role === a.role);
      if (orig) a = orig.message;
    }
    if (!jsonEqual(a, b)) {
      problems.push(`${label}message ${i}: transcript ${JSON.stringify(a)?.slice(0, 240)} != store ${JSON.stringify(b)?.slice(0, 240)}`);
      if (problems.length > 5) break;
    }
  }
  return problems;
}

export { degradationLines, parseJsonl };

// ---- the output cap -------------------------------------------------------------

/** OpenClaw's system message(s) at the head of a request: [index, ...]. */
function headSystemIndexes(msgs) {
  const out = [];
  for (let k = 0; k < msgs.length && (msgs[k]?.role === "system" || msgs[k]?.role === "developer"); k++) out.push(k);
  return out;
}

/**
 * What each agent call (a request with tools) of a session got as output
 * cap, and whose part of the request left it so small. The transport
 * (OPENCLAW-RUNTIME.md §3b) sends max_completion_tokens = min(model
 * maxTokens, max(1, window − estimate − 1)), the estimate being
 * ceil(chars/4 × 1.25) of the whole request. OpenClaw's own part is what it
 * sends whatever the engine does: the system prompt (less the engine's
 * systemPromptAddition, found in `additions`), the tool schemas, and the
 * turn's pending messages (from the turn's prompt on: the prompt, OpenClaw's
 * context note after it, the tool calls and results of the turn); the
 * engine's part is the rest (its assembled context before the prompt).
 * `room` = window − estimate(own part) − 1: the cap the call would have
 * had with an empty context. A cut reply on a call whose room holds the whole
 * answer (`wanted` tokens) was cut by the engine's context.
 *
 * Returns one row per request: {seq, turn (the plan's i, or null), agent
 * (has tools), cap, transport, own, room, wanted, completion, finish, cut,
 * roomForReply, expectedCap}.
 */
export function capRows(reqs, { window, maxTokens = 1024, additions = [] }) {
  const adds = [...new Set(additions.filter((a) => typeof a === "string" && a.length > 0))].sort((a, b) => b.length - a.length);
  return reqs
    .filter((r) => r.tokens && r.response?.status === 200)
    .map((r) => {
      const b = r.body ?? {};
      const msgs = b.messages ?? [];
      const agent = (b.tools?.length ?? 0) > 0;
      const u = promptIndex(msgs);
      let ownChars = transportToolsChars(b);
      for (const k of headSystemIndexes(msgs)) {
        let c = transportMessageChars(msgs[k]);
        const text = contentText(msgs[k].content);
        const add = adds.find((a) => text.includes(a));
        if (add) c -= add.length;
        ownChars += c;
      }
      if (u >= 0) for (const m of msgs.slice(u)) ownChars += transportMessageChars(m);
      const own = transportTokens(ownChars);
      const room = window - own - 1;
      const t = r.tokens;
      const hit = u >= 0 ? PROMPT_RE.exec(contentText(msgs[u].content)) : null;
      return {
        seq: r.seq,
        turn: hit ? Number(hit[1]) : null,
        agent,
        prompt: u >= 0,
        cap: t.cap,
        transport: t.transport,
        promptTokens: t.prompt,
        own,
        room,
        wanted: t.wanted,
        completion: t.completion,
        finish: r.finishReason,
        cut: r.finishReason === "length",
        roomForReply: room >= t.wanted,
        expectedCap: Math.min(maxTokens, Math.max(1, window - t.transport - 1)),
      };
    });
}

/** The figures of capRows: agent calls, replies cut (all; on calls whose own part left room for the reply), calls with cap <= 16, side calls (no tools) cut. */
export function capFigures(rows) {
  const agent = rows.filter((r) => r.agent);
  const side = rows.filter((r) => !r.agent);
  const cut = agent.filter((r) => r.cut);
  return {
    agentCalls: agent.length,
    repliesCut: cut.length,
    repliesCutWithRoom: cut.filter((r) => r.roomForReply).length,
    callsWithRoom: agent.filter((r) => r.roomForReply).length,
    capsAtMost16: agent.filter((r) => r.cap != null && r.cap <= 16).length,
    smallestCap: agent.reduce((a, r) => Math.min(a, r.cap ?? Infinity), Infinity),
    sideCalls: side.length,
    sideCut: side.filter((r) => r.cut).length,
    capMismatches: agent.filter((r) => r.cap !== r.expectedCap).length,
  };
}

/** A cap row in words, for failure messages. */
export const capRowText = (r) =>
  `request #${r.seq} (turn ${r.turn ?? "?"}): cap ${r.cap} (${r.completion} of ${r.wanted} tokens sent, finish ${r.finish}); OpenClaw's estimate ${r.transport} (own part ${r.own}, engine's part ${r.transport - r.own}), room without the engine's context ${r.room}; provider count ${r.promptTokens}`;

/** The engine's systemPromptAddition strings seen in assemble results. */
export const systemPromptAdditions = (calls) => calls.filter((c) => c.method === "assemble" && typeof c.result?.systemPromptAddition === "string").map((c) => c.result.systemPromptAddition);
