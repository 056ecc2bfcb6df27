// A fake OpenAI-compatible model server for the end-to-end tests, speaking
// the real wire format on 127.0.0.1:
//
//   POST /v1/chat/completions   streaming (SSE `data: {chat.completion.chunk}`
//                               lines, then `data: [DONE]`) or not
//   GET  /v1/models             the configured model ids
//
// Every request is appended to a JSONL log (one line: {seq, time, method,
// path, auth, approxTokens, response, body}), `auth` being the Authorization
// header the client sent (so a test can prove the configured key is live).
//
// What a chat completion answers, in order:
//   1. the first matching rule (setRules / POST /_control/rules), e.g. "a
//      request without tools is a summarization call: answer with this text";
//   2. the next queued response (enqueue / POST /_control/enqueue);
//   3. automatic overflow: when the request's characters / 4 exceed the
//      context limit (setContextLimit / POST /_control/config
//      {contextLimitTokens}), the error a real provider returns;
//   4. the default: a short deterministic reply, "Noted (reply N).", that
//      never echoes the prompt.
// Automatic overflow (3) is checked before the queue (2) as well, so a
// scripted answer never hides a request that would not have fit.
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
import { EventEmitter } from "node:events";

export const OVERFLOW_CODE = "context_length_exceeded";

/** OpenAI's context-overflow error body for a request of `tokens` tokens. */
export function overflowError(limit, tokens) {
  return {
    error: {
      message: `This model's maximum context length is ${limit} tokens. However, your messages resulted in ${tokens} tokens. Please reduce the length of the messages.`,
      type: "invalid_request_error",
      param: "messages",
      code: OVERFLOW_CODE,
    },
  };
}

/** The token estimate the server uses: characters of messages and tools / 4. */
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
 * setRules, setContextLimit, requests, close}.
 */
export async function startFakeModel({ logFile, host = "127.0.0.1", port = 0, modelIds = ["fake-1"], contextLimitTokens = 0 } = {}) {
  if (!logFile) throw new Error("fake-model: logFile is required");
  const events = new EventEmitter();
  const queue = [];
  let rules = [];
  let limit = contextLimitTokens;
  let seq = 0;
  let replies = 0;
  const sockets = new Set();

  const log = (entry) => fs.appendFileSync(logFile, JSON.stringify(entry) + "\n");

  function choose(body, n) {
    const tokens = approxTokens(body);
    for (const rule of rules) {
      if (ruleMatches(rule, body)) return { source: "rule", response: rule.response };
    }
    if (limit > 0 && tokens > limit) return { source: "auto-overflow", response: { overflow: true } };
    if (queue.length > 0) return { source: "queue", response: queue.shift() };
    return { source: "default", response: null };
  }

  function resolveResponse(r, body, n) {
    return typeof r === "function" ? r(body, n) : r;
  }

  async function handleChat(req, res, body, entry) {
    const n = entry.seq;
    events.emit("arrive", entry);
    let { source, response } = choose(body, n);
    response = resolveResponse(response, body, n) ?? { text: `Noted (reply ${++replies}).` };
    if (response.delayMs) await new Promise((r) => setTimeout(r, response.delayMs));
    const tokens = entry.approxTokens;
    if (response.overflow) {
      const lim = limit > 0 ? limit : Math.max(1, tokens - 1);
      entry.response = { source, kind: "overflow", status: 400 };
      log(entry);
      events.emit("request", entry);
      sendJson(res, 400, overflowError(lim, tokens));
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
    const toolCalls = calls.map((c, i) => ({
      id: c.id ?? `call_e2e_${n}_${i}`,
      type: "function",
      function: { name: c.name, arguments: typeof c.arguments === "string" ? c.arguments : JSON.stringify(c.arguments ?? {}) },
    }));
    const text = response.text ?? (toolCalls.length ? "" : `Noted (reply ${++replies}).`);
    entry.response = { source, kind: toolCalls.length ? "tool_call" : "text", status: 200, text, toolCalls };
    log(entry);
    events.emit("request", entry);
    const id = `chatcmpl-e2e-${n}`;
    const created = Math.floor(Date.now() / 1000);
    const model = body.model ?? modelIds[0];
    const finish = toolCalls.length ? "tool_calls" : "stop";
    const usage = {
      prompt_tokens: tokens,
      completion_tokens: Math.max(1, Math.ceil((text.length + JSON.stringify(toolCalls).length) / 4)),
    };
    usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
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
    for (const piece of text.match(/[\s\S]{1,16}/g) ?? []) chunk({ content: piece });
    toolCalls.forEach((tc, index) => {
      chunk({ tool_calls: [{ index, id: tc.id, type: "function", function: { name: tc.function.name, arguments: "" } }] });
      for (const piece of tc.function.arguments.match(/[\s\S]{1,24}/g) ?? []) chunk({ tool_calls: [{ index, function: { arguments: piece } }] });
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
          response: null,
          body,
        };
        if (req.method === "GET" && /\/models\/?$/.test(url.pathname)) {
          entry.response = { kind: "models", status: 200 };
          log(entry);
          return sendJson(res, 200, { object: "list", data: modelIds.map((id) => ({ id, object: "model", created: 0, owned_by: "e2e" })) });
        }
        if (req.method === "POST" && /\/chat\/completions\/?$/.test(url.pathname)) return await handleChat(req, res, body ?? {}, entry);
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
