// A fake OpenAI-compatible model server for the end-to-end tests, speaking
// the real wire format on 127.0.0.1, and as strict as a real provider about
// the window and the output cap:
//
//   POST /v1/chat/completions   streaming (SSE `data: {chat.completion.chunk}`
//                               lines, then `data: [DONE]`) or not
//   GET  /v1/models             the configured model ids
//
// Tokens are counted with a real tokenizer, o200k_base (gpt-tokenizer, pinned
// and installed outside the repository by .ci/openclaw-setup.sh, found
// through $LOSSLESS_TOKENIZER_DIR), never with the engine's characters / 4:
//   - the prompt: what an OpenAI-compatible server renders from the request,
//     its chat template (3 tokens a message plus the role, each text field,
//     each tool call's name and arguments, 3 tokens priming the reply) and
//     the tool schemas as their JSON (open-weight models' templates put the
//     schemas' JSON into the prompt);
//   - the reply: the tokens of its text, then of each tool call's name and
//     arguments.
//
// The window (setContextLimit / {contextLimitTokens}), checked before any
// rule or queued answer, as OpenAI and vLLM check it: the prompt's tokens
// plus the requested output cap (`max_completion_tokens`, else `max_tokens`;
// without one, at least one token) must not exceed the context length, else
// HTTP 400 with OpenAI's context_length_exceeded body ("This model's maximum
// context length is N tokens. However, you requested X tokens (P in the
// messages, C in the completion). ..."; vLLM answers the same check with
// "'max_tokens' or 'max_completion_tokens' is too large ..."). So a request
// whose cap leaves its prompt in the window gets an answer.
//
// The output cap: an answer longer than the request's cap is cut at the cap,
// token by token (the text first, then the tool calls: a tool call that does
// not fit whole is sent with its arguments cut, or left out when not even
// its name fits), and answered with `finish_reason: "length"`, in the stream
// and in the JSON form alike, as a real provider does. (OpenClaw then shows
// "⚠️ Reply truncated at the model's output token limit"; a cut tool call is
// not run, and a turn left with no text fails.)
//
// Every request is appended to a JSONL log, one line: {seq, time, method,
// path, auth, approxTokens, tokens, finishReason, response, body}: `auth` the
// Authorization header the client sent (so a test can prove the configured
// key is live), `approxTokens` the characters of messages and tools / 4 (the
// engine's own estimate), `tokens` {prompt (o200k_base), chars4 (=
// approxTokens), transport (OpenClaw's estimate of the request, see
// transportEstimate), cap (the requested output cap, null when none),
// wanted (the whole answer's tokens), completion (the tokens sent)} and
// finishReason ("stop", "tool_calls", "length"; null for an error).
//
// What a chat completion answers, in order:
//   1. the window: a request that does not fit gets the overflow answer;
//   2. the first matching rule (setRules / POST /_control/rules), e.g. "a
//      request without tools is a summarization call: answer with this text";
//   3. the next queued response (enqueue / POST /_control/enqueue);
//   4. the default: a short deterministic reply, "Noted (reply N).", that
//      never echoes the prompt.
//
// A response is an object:
//   {text: "..."}                                 plain assistant text
//   {toolCall: {name, arguments}} (or toolCalls: [...]) a tool call; arguments
//                                                 an object or a JSON string
//   {overflow: true}                              HTTP 400, OpenAI's
//                                                 context_length_exceeded error
//   {status, error: {...}}                        any other error
//   ...plus optional delayMs (wait before answering).
// A rule is {when: {noTools?, contains?, lastUserContains?}, response} (over
// HTTP) or, in process, {when: (body) => boolean, response}; a response may
// also be a function (body, seq) => response in process.
//
// OpenClaw classifies a provider error as a context overflow by its message
// (@openclaw/ai dist/internal/runtime.mjs CONTEXT_OVERFLOW_PATTERN_SCOPES:
// /maximum context length is \d+ tokens/i, /context[_ ]length[_ ]exceeded/i,
// "failover-explicit" /maximum context length/i, ...); the body below is the
// one OpenAI returns, which matches several of them.
//
// In process, `events` emits "arrive" (entry) when a chat completion comes in
// and "request" (entry, with its response) when it is answered.
//
// Run standalone: node fake-model.mjs --log requests.jsonl [--port N]
// [--context-limit TOKENS]; it prints {"url": ...} on stdout.

import http from "node:http";
import fs from "node:fs";
import path from "node:path";
import { EventEmitter } from "node:events";
import { pathToFileURL } from "node:url";

export const OVERFLOW_CODE = "context_length_exceeded";

// ---- the tokenizer ----------------------------------------------------------

/** Why the tokenizer cannot be loaded (null: it is loaded). */
export let tokenizerProblem = null;
let tok = null;
{
  const dir = process.env.LOSSLESS_TOKENIZER_DIR;
  if (!dir) tokenizerProblem = "LOSSLESS_TOKENIZER_DIR is not set (eval \"$(.ci/openclaw-setup.sh)\" installs gpt-tokenizer and sets it)";
  else {
    const file = path.join(dir, "esm", "encoding", "o200k_base.js");
    try {
      const m = await import(pathToFileURL(file).href);
      const version = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")).version;
      // Special tokens in the text are counted as text, as a server does with a user's text.
      const opts = { disallowedSpecial: new Set() };
      tok = { name: "o200k_base", version, encode: (t) => m.encode(t, opts), decode: (ids) => m.decode(ids) };
    } catch (err) {
      tokenizerProblem = `cannot load the o200k_base tokenizer from LOSSLESS_TOKENIZER_DIR=${dir} (${file}): ${err?.message ?? err}`;
    }
  }
}

/** The tokenizer ({name, version, encode, decode}); throws with the reason when it is missing. */
export function tokenizer() {
  if (!tok) throw new Error(`fake-model: ${tokenizerProblem}`);
  return tok;
}

/** o200k_base tokens of a string. */
export const countTokens = (text) => (text ? tokenizer().encode(String(text)).length : 0);

/** OpenAI's context-overflow error body: `prompt` tokens in the messages, `cap` requested for the completion (null: none). */
export function overflowError(limit, prompt, cap = null) {
  const message =
    cap == null
      ? `This model's maximum context length is ${limit} tokens. However, your messages resulted in ${prompt} tokens. Please reduce the length of the messages.`
      : `This model's maximum context length is ${limit} tokens. However, you requested ${prompt + cap} tokens (${prompt} in the messages, ${cap} in the completion). Please reduce the length of the messages or completion.`;
  return { error: { message, type: "invalid_request_error", param: "messages", code: OVERFLOW_CODE } };
}

/** The engine's estimate: characters of messages and tools (their JSON) / 4. */
export function approxTokens(body) {
  if (!body || typeof body !== "object") return 0;
  const chars = JSON.stringify(body.messages ?? []).length + JSON.stringify(body.tools ?? []).length;
  return Math.ceil(chars / 4);
}

function textOf(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((p) => (typeof p === "string" ? p : p?.text ?? "")).join("\n");
  return "";
}

// ---- OpenClaw's estimate of a request (what it sizes max_completion_tokens by) ----

// @openclaw/ai (2026.9.6) dist/transport-utils-*.mjs estimateStringChars and
// openai-completions-stream-*.mjs estimateOpenAICompletionsInputTokens: CJK
// characters count 4, an image part 8,000 characters, a message's text parts,
// reasoning fields and tool calls' JSON, the tools' JSON; then
// ceil(chars / 4 × 1.25). The transport sends max_completion_tokens =
// min(model maxTokens, max(1, window − estimate − 1)).
const NON_LATIN_RE = /[\u2E80-\u9FFF\uA000-\uA4FF\uAC00-\uD7AF\uF900-\uFAFF\uFF01-\uFF60\uFFE0-\uFFE6\u{20000}-\u{2FA1F}]/gu;
const CJK_SURROGATE_HIGH_RE = /[\uD840-\uD87E][\uDC00-\uDFFF]/g;
const REASONING_FIELDS = ["reasoning_details", "reasoning_content", "reasoning", "reasoning_text"];

function estimateStringChars(text) {
  if (!text) return 0;
  const nonLatin = (text.match(NON_LATIN_RE) ?? []).length;
  return (nonLatin === 0 ? text.length : text.length - (text.match(CJK_SURROGATE_HIGH_RE) ?? []).length) + nonLatin * 3;
}

function contentChars(value) {
  if (typeof value === "string") return estimateStringChars(value);
  if (!Array.isArray(value)) return 0;
  let n = 0;
  for (const block of value) {
    if (!block || typeof block !== "object") continue;
    if (block.type === "image_url" || block.type === "input_image") n += 8000;
    else if (typeof block.text === "string") n += estimateStringChars(block.text);
    else n += estimateStringChars(JSON.stringify(block));
  }
  return n;
}

/** OpenClaw's transport characters of one message. */
export function transportMessageChars(m) {
  if (!m || typeof m !== "object") return 0;
  let n = contentChars(m.content);
  for (const f of REASONING_FIELDS) n += contentChars(m[f]);
  if (m.tool_calls !== undefined) n += estimateStringChars(JSON.stringify(m.tool_calls));
  return n;
}

/** OpenClaw's transport characters of the request's tool schemas (and response_format). */
export function transportToolsChars(body) {
  let n = 0;
  if (Array.isArray(body?.tools) && body.tools.length > 0) n += estimateStringChars(JSON.stringify(body.tools));
  if (body?.response_format !== undefined) n += estimateStringChars(JSON.stringify(body.response_format));
  return n;
}

/** Transport characters to OpenClaw's token estimate: ceil(chars / 4 × 1.25). */
export const transportTokens = (chars) => Math.ceil((chars / 4) * 1.25);

/** OpenClaw's estimate of the whole request. */
export function transportEstimate(body) {
  const chars = transportToolsChars(body) + (body?.messages ?? []).reduce((a, m) => a + transportMessageChars(m), 0);
  return transportTokens(chars);
}

// ---- the provider's count -----------------------------------------------------

/** The prompt's o200k_base tokens as an OpenAI-compatible server renders the request (see the header). */
export function promptTokens(body) {
  let n = 3; // the reply's priming
  for (const m of body?.messages ?? []) {
    if (!m || typeof m !== "object") continue;
    n += 3 + countTokens(m.role);
    n += countTokens(textOf(m.content));
    for (const f of ["name", "tool_call_id", ...REASONING_FIELDS]) if (typeof m[f] === "string") n += countTokens(m[f]);
    for (const c of m.tool_calls ?? []) n += 3 + countTokens(c?.function?.name) + countTokens(c?.function?.arguments);
  }
  if (Array.isArray(body?.tools) && body.tools.length > 0) n += countTokens(JSON.stringify(body.tools));
  if (body?.response_format !== undefined) n += countTokens(JSON.stringify(body.response_format));
  return n;
}

/** The output cap a request asks for (max_completion_tokens, else max_tokens; null: none). */
export function requestedCap(body) {
  const v = body?.max_completion_tokens ?? body?.max_tokens;
  return Number.isFinite(v) && v > 0 ? Math.floor(v) : null;
}

/**
 * An answer cut at `cap` tokens, as a provider stops generating there: the
 * text first, then each tool call (its name, then its arguments). Returns
 * {text, toolCalls, wanted, completion, cut}.
 */
export function cutAnswer(text, toolCalls, cap) {
  const t = tokenizer();
  const textIds = text ? t.encode(text) : [];
  const callTokens = toolCalls.map((c) => ({ name: t.encode(c.function.name).length, args: t.encode(c.function.arguments) }));
  const wanted = textIds.length + callTokens.reduce((a, c) => a + c.name + c.args.length, 0);
  if (cap == null || wanted <= cap) return { text, toolCalls, wanted, completion: wanted, cut: false };
  let room = cap;
  const outText = textIds.length > room ? t.decode(textIds.slice(0, room)) : text;
  room -= Math.min(room, textIds.length);
  const outCalls = [];
  toolCalls.forEach((c, k) => {
    const ct = callTokens[k];
    if (room <= ct.name) {
      room = 0; // not even the name fits: the call is not sent
      return;
    }
    const argRoom = room - ct.name;
    const args = ct.args.length > argRoom ? t.decode(ct.args.slice(0, argRoom)) : c.function.arguments;
    outCalls.push({ ...c, function: { ...c.function, arguments: args } });
    room -= ct.name + Math.min(argRoom, ct.args.length);
  });
  return { text: outText, toolCalls: outCalls, wanted, completion: cap, cut: true };
}

function lastUserText(body) {
  const msgs = body?.messages ?? [];
  for (let i = msgs.length - 1; i >= 0; i--) if (msgs[i]?.role === "user") return textOf(msgs[i].content);
  return "";
}

function ruleMatches(rule, body) {
  const w = rule.when;
  if (typeof w === "function") return Boolean(w(body));
  if (!w || typeof w !== "object") return true;
  if (w.noTools && (body.tools?.length ?? 0) > 0) return false;
  if (w.contains && !JSON.stringify(body).includes(w.contains)) return false;
  if (w.lastUserContains && !lastUserText(body).includes(w.lastUserContains)) return false;
  return true;
}

/**
 * Starts the server. Returns {url, baseUrl, port, logFile, events, enqueue,
 * setRules, setContextLimit, requests, close}. Throws when the tokenizer is
 * missing.
 */
export async function startFakeModel({ logFile, host = "127.0.0.1", port = 0, modelIds = ["fake-1"], contextLimitTokens = 0 } = {}) {
  if (!logFile) throw new Error("fake-model: logFile is required");
  tokenizer();
  const events = new EventEmitter();
  const queue = [];
  let rules = [];
  let limit = contextLimitTokens;
  let seq = 0;
  let replies = 0;
  const sockets = new Set();

  const log = (entry) => fs.appendFileSync(logFile, JSON.stringify(entry) + "\n");

  /** Whether the request fits the window: prompt + cap (at least 1) <= limit. */
  const overflows = (entry) => limit > 0 && entry.tokens.prompt + (entry.tokens.cap ?? 1) > limit;

  function choose(body, entry) {
    if (overflows(entry)) return { source: "auto-overflow", response: { overflow: true } };
    for (const rule of rules) {
      if (ruleMatches(rule, body)) return { source: "rule", response: rule.response };
    }
    if (queue.length > 0) return { source: "queue", response: queue.shift() };
    return { source: "default", response: null };
  }

  function resolveResponse(r, body, n) {
    return typeof r === "function" ? r(body, n) : r;
  }

  async function handleChat(req, res, body, entry) {
    const n = entry.seq;
    events.emit("arrive", entry);
    let { source, response } = choose(body, entry);
    response = resolveResponse(response, body, n) ?? { text: `Noted (reply ${++replies}).` };
    if (response.delayMs) await new Promise((r) => setTimeout(r, response.delayMs));
    const { prompt, cap } = entry.tokens;
    if (response.overflow) {
      const lim = limit > 0 ? limit : Math.max(1, prompt - 1);
      entry.response = { source, kind: "overflow", status: 400 };
      log(entry);
      events.emit("request", entry);
      sendJson(res, 400, overflowError(lim, prompt, cap));
      return;
    }
    if (response.error) {
      const status = response.status ?? 500;
      entry.response = { source, kind: "error", status };
      log(entry);
      events.emit("request", entry);
      sendJson(res, status, { error: response.error });
      return;
    }
    const calls = response.toolCalls ?? (response.toolCall ? [response.toolCall] : []);
    const whole = calls.map((c, i) => ({
      id: c.id ?? `call_e2e_${n}_${i}`,
      type: "function",
      function: { name: c.name, arguments: typeof c.arguments === "string" ? c.arguments : JSON.stringify(c.arguments ?? {}) },
    }));
    const wholeText = response.text ?? (whole.length ? "" : `Noted (reply ${++replies}).`);
    const answer = cutAnswer(wholeText, whole, cap);
    const { text, toolCalls } = answer;
    const finish = answer.cut ? "length" : toolCalls.length ? "tool_calls" : "stop";
    entry.tokens.wanted = answer.wanted;
    entry.tokens.completion = answer.completion;
    entry.finishReason = finish;
    entry.response = {
      source,
      kind: whole.length ? "tool_call" : "text",
      status: 200,
      text,
      toolCalls,
      ...(answer.cut ? { cut: true, wholeText, wholeToolCalls: whole } : {}),
    };
    log(entry);
    events.emit("request", entry);
    const id = `chatcmpl-e2e-${n}`;
    const created = Math.floor(Date.now() / 1000);
    const model = body.model ?? modelIds[0];
    const usage = { prompt_tokens: prompt, completion_tokens: answer.completion, total_tokens: prompt + answer.completion };
    if (!body.stream) {
      const message = { role: "assistant", content: text || null };
      if (toolCalls.length) message.tool_calls = toolCalls;
      sendJson(res, 200, { id, object: "chat.completion", created, model, choices: [{ index: 0, message, finish_reason: finish }], usage });
      return;
    }
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
    const chunk = (delta, finish_reason = null) =>
      res.write(`data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model, choices: [{ index: 0, delta, finish_reason }] })}\n\n`);
    chunk({ role: "assistant", content: "" });
    // Text in a few pieces, as a real stream would.
    for (const piece of text.match(/[\s\S]{1,16}/gu) ?? []) chunk({ content: piece });
    toolCalls.forEach((tc, index) => {
      chunk({ tool_calls: [{ index, id: tc.id, type: "function", function: { name: tc.function.name, arguments: "" } }] });
      for (const piece of tc.function.arguments.match(/[\s\S]{1,24}/gu) ?? []) chunk({ tool_calls: [{ index, function: { arguments: piece } }] });
    });
    chunk({}, finish);
    if (body.stream_options?.include_usage) {
      res.write(`data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model, choices: [], usage })}\n\n`);
    }
    res.end("data: [DONE]\n\n");
  }

  function sendJson(res, status, obj) {
    const data = JSON.stringify(obj);
    res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(data) });
    res.end(data);
  }

  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", async () => {
      const raw = Buffer.concat(chunks).toString("utf8");
      let body = null;
      try {
        body = raw ? JSON.parse(raw) : null;
      } catch {
        body = { unparsed: raw };
      }
      const url = new URL(req.url, "http://x");
      try {
        if (url.pathname.startsWith("/_control/")) {
          const what = url.pathname.slice("/_control/".length);
          if (what === "enqueue") queue.push(...(Array.isArray(body) ? body : [body]));
          else if (what === "rules") rules = Array.isArray(body) ? body : [];
          else if (what === "config") limit = Number(body?.contextLimitTokens ?? limit) || 0;
          else if (what === "reset") {
            queue.length = 0;
            rules = [];
          } else return sendJson(res, 404, { error: { message: `unknown control ${what}` } });
          return sendJson(res, 200, { ok: true, queued: queue.length, rules: rules.length, contextLimitTokens: limit });
        }
        const entry = {
          seq: ++seq,
          time: Date.now(),
          method: req.method,
          path: url.pathname,
          auth: req.headers.authorization ?? null,
          approxTokens: approxTokens(body),
          tokens: null,
          finishReason: null,
          response: null,
          body,
        };
        if (req.method === "GET" && /\/models\/?$/.test(url.pathname)) {
          entry.response = { kind: "models", status: 200 };
          log(entry);
          return sendJson(res, 200, { object: "list", data: modelIds.map((id) => ({ id, object: "model", created: 0, owned_by: "e2e" })) });
        }
        if (req.method === "POST" && /\/chat\/completions\/?$/.test(url.pathname)) {
          const b = body ?? {};
          entry.tokens = { prompt: promptTokens(b), chars4: entry.approxTokens, transport: transportEstimate(b), cap: requestedCap(b), wanted: null, completion: null };
          return await handleChat(req, res, b, entry);
        }
        entry.response = { kind: "not_found", status: 404 };
        log(entry);
        return sendJson(res, 404, { error: { message: `no route for ${req.method} ${url.pathname}`, type: "invalid_request_error" } });
      } catch (err) {
        if (!res.headersSent) sendJson(res, 500, { error: { message: String(err?.stack ?? err), type: "server_error" } });
        else res.end();
      }
    });
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, resolve);
  });
  const actualPort = server.address().port;
  const url = `http://${host}:${actualPort}`;
  return {
    url,
    baseUrl: `${url}/v1`,
    port: actualPort,
    logFile,
    events,
    /** Queues responses for the next chat completions, in order. */
    enqueue: (...responses) => queue.push(...responses),
    /** Replaces the rules. */
    setRules: (r) => {
      rules = r ?? [];
    },
    setContextLimit: (n) => {
      limit = n || 0;
    },
    get queued() {
      return queue.length;
    },
    /** Every logged request so far (parsed from the log). */
    requests: () => readRequestLog(logFile),
    close: () =>
      new Promise((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** Parses a request log written by the server. */
export function readRequestLog(logFile) {
  if (!fs.existsSync(logFile)) return [];
  return fs
    .readFileSync(logFile, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

// Standalone use.
if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2);
  const opt = (name, def) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : def;
  };
  const srv = await startFakeModel({
    logFile: opt("--log", "fake-model-requests.jsonl"),
    port: Number(opt("--port", "0")),
    contextLimitTokens: Number(opt("--context-limit", "0")),
  });
  process.stdout.write(JSON.stringify({ url: srv.url, baseUrl: srv.baseUrl, log: srv.logFile }) + "\n");
}
