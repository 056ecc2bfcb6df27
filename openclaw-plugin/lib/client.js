// A JSON-RPC 2.0 client for `lossless serve --stdio`: one long-lived child
// process, newline-delimited messages, concurrent requests matched by id,
// abort signals turned into $/cancelRequest, host callbacks (the server asks
// for runtimeContext.rewriteTranscriptEntries / llm.complete, or a page of
// the session transcript, on behalf of one request), and restart after a
// crash. The child does not keep Node's event loop alive while no request
// is in flight.

import { AsyncLocalStorage } from "node:async_hooks";
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";

import { versionMismatch } from "./binary.js";

export const PROTOCOL_VERSION = 1;

const STDERR_TAIL = 4096;

// The signals that stop a process on purpose: a child that dies of one was
// stopped, not crashed.
const STOP_SIGNALS = new Set(["SIGTERM", "SIGINT", "SIGHUP"]);

/**
 * Tells whether an engine process that exited this way was stopped rather
 * than crashed: `lossless serve` exits 0 only when told to stop (a signal,
 * which it handles as a graceful shutdown, or its stdin closing); a process
 * without such a handler dies of the signal. The usual sender is the
 * host's own shutdown: OpenClaw's gateway is stopped by a SIGTERM to its
 * process group, which reaches the engine process too.
 */
export function stoppedOnPurpose(code, signal) {
  return code === 0 || STOP_SIGNALS.has(signal);
}

// The line `lossless serve --ui ADDR` prints with the explorer's URL.
const EXPLORER_LINE = /memory explorer \(lossless ui\) at (http:\/\/\S+)/;

/** An error the engine process returned (JSON-RPC error object). */
export class BridgeError extends Error {
  constructor(method, error) {
    super(`lossless ${method}: ${error.message}`);
    this.name = "LosslessBridgeError";
    this.code = error.code;
    this.data = error.data;
  }
}

/** The engine process exited or could not be started. */
export class BridgeCrashError extends Error {
  constructor(message) {
    super(message);
    this.name = "LosslessBridgeCrashError";
  }
}

function abortError(signal) {
  const reason = signal?.reason;
  if (reason instanceof Error) return reason;
  const err = new Error(reason ? String(reason) : "This operation was aborted");
  err.name = "AbortError";
  return err;
}

/**
 * BridgeClient owns one engine process, started by the first request (or
 * start()). When the process dies, the calls in flight reject with a
 * BridgeCrashError, the crash is logged, and the process is restarted at
 * once (at most `maxRestarts` times a minute; past that, by the next
 * request): a crash while idle costs the next call nothing. A process
 * stopped on purpose (stoppedOnPurpose: the gateway's shutdown signals its
 * whole process group) is not restarted at once: that would start an
 * engine in a host that is stopping; the next request, if any, starts it.
 */
export class BridgeClient {
  constructor({ command, args = ["serve", "--stdio"], env, initialize, maxRestarts = 5, startTimeoutMs = 60_000, logger, pluginVersion } = {}) {
    if (!command) throw new TypeError("lossless: no engine command");
    this.command = command;
    this.pluginVersion = pluginVersion; // the version the binary must report; default the plugin's (lib/binary.js)
    this.args = args;
    this.env = env;
    this.initParams = initialize ?? {};
    this.maxRestarts = maxRestarts;
    this.startTimeoutMs = startTimeoutMs;
    this.logger = logger;
    this.nextId = 1;
    this.pending = new Map(); // id -> {resolve, reject, method, callbacks}
    this.hostCalls = new Map(); // server call id -> AbortController
    this.child = null;
    this.starting = null; // promise of the running start()
    this.restartTimes = [];
    this.restarts = 0;
    this.lastCrash = null; // the last crash's error (diagnostics)
    this.closed = false;
    this.stderrTail = "";
    this.initResult = null;
    this.uiUrl = undefined; // the memory explorer's URL (`serve --ui`), once printed
  }

  #refd = true;
  #closing = false;

  /**
   * Holds Node's event loop open only while the child has work (requests
   * or host callbacks in flight, or initialize): an idle engine process
   * must not keep `openclaw agent` (or a test run) from exiting.
   */
  #syncRef() {
    const child = this.child;
    if (!child) return;
    const busy = this.pending.size > 0 || this.hostCalls.size > 0 || this.#closing;
    if (busy === this.#refd) return;
    this.#refd = busy;
    for (const h of [child, child.stdin, child.stdout, child.stderr]) {
      try {
        busy ? h?.ref?.() : h?.unref?.();
      } catch {
        // a closed stream
      }
    }
  }

  /** The running child's pid, or undefined. */
  get pid() {
    return this.child?.pid;
  }

  /** Starts the process (if needed) and returns the initialize result. */
  async start() {
    if (this.closed) throw new BridgeCrashError("lossless: engine process closed");
    if (this.child && this.initResult) return this.initResult;
    if (!this.starting) {
      this.starting = this.#spawnAndInit().finally(() => {
        this.starting = null;
      });
    }
    return this.starting;
  }

  async #spawnAndInit() {
    const child = spawn(this.command, this.args, {
      stdio: ["pipe", "pipe", "pipe"],
      env: this.env ?? process.env,
    });
    this.child = child;
    this.initResult = null;
    this.stderrTail = "";
    this.#refd = true; // a new child holds the event loop until it is idle
    let spawnError = null;
    child.on("error", (err) => {
      spawnError = err;
      this.#onExit(child, null, null, err);
    });
    child.on("exit", (code, signal) => this.#onExit(child, code, signal, null));
    child.stdin.on("error", () => {}); // EPIPE after a crash: reported by exit
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk) => {
      this.stderrTail = (this.stderrTail + chunk).slice(-STDERR_TAIL);
      for (const line of chunk.split("\n")) {
        if (!line.trim()) continue;
        const ui = EXPLORER_LINE.exec(line);
        if (ui) {
          // `serve --ui`: where the memory explorer of this process is. The
          // whole line is logged: OpenClaw's log may redact or cut the
          // token, and the rest says which owner-only file holds the URL
          // (`lossless ui --url` prints it).
          this.uiUrl = ui[1];
          this.logger?.info?.(`lossless: ${line.replace(/^lossless serve: /, "").trim()}`);
          continue;
        }
        // Go's default slog lines carry their level: "… INFO msg …".
        const level = / (DEBUG|INFO) /.test(line) ? "info" : / ERROR /.test(line) ? "error" : "warn";
        (this.logger?.[level] ?? this.logger?.warn)?.call(this.logger, `lossless: ${line}`);
      }
    });
    const rl = createInterface({ input: child.stdout, crlfDelay: Infinity });
    rl.on("line", (line) => this.#onLine(child, line));
    let result;
    try {
      const timeout = AbortSignal.timeout(this.startTimeoutMs);
      result = await this.#send(child, "initialize", { ...this.initParams, protocolVersion: PROTOCOL_VERSION }, { signal: timeout }).catch((err) => {
        if (timeout.aborted) throw new BridgeCrashError(`lossless: engine process did not initialize within ${this.startTimeoutMs} ms`);
        throw err;
      });
      if (result?.protocolVersion !== PROTOCOL_VERSION) {
        throw new BridgeCrashError(`lossless: engine speaks protocol ${result?.protocolVersion}, this plugin ${PROTOCOL_VERSION}`);
      }
      // A released plugin runs the binary of its own release.
      const mismatch = versionMismatch(result?.server, this.command, this.pluginVersion);
      if (mismatch) throw new BridgeCrashError(mismatch);
    } catch (err) {
      // A process that could not initialize is not kept (nor restarted).
      if (this.child === child) this.child = null;
      if (child.exitCode === null) child.kill("SIGKILL");
      throw spawnError ? new BridgeCrashError(`lossless: cannot start ${this.command}: ${spawnError.message}`) : err;
    }
    this.initResult = result;
    return result;
  }

  #onExit(child, code, signal, error) {
    if (this.child !== child) return; // an old process
    const wasUp = this.initResult !== null;
    this.child = null;
    this.initResult = null;
    const why = error
      ? `could not be started (${this.command}): ${error.message}`
      : `exited (code ${code}, signal ${signal})`;
    const tail = this.stderrTail.trim() ? `; stderr: ${this.stderrTail.trim().slice(-1000)}` : "";
    const err = new BridgeCrashError(`lossless: engine process ${why}${tail}`);
    for (const ac of this.hostCalls.values()) ac.abort(err);
    this.hostCalls.clear();
    const inFlight = [...this.pending.values()];
    this.pending.clear();
    for (const p of inFlight) p.reject(err);
    if (this.closed || !wasUp) return;
    if (!error && stoppedOnPurpose(code, signal)) {
      this.logger?.info?.(`lossless: engine process stopped (code ${code}, signal ${signal}); not restarted now: the next call starts it`);
      return;
    }
    // A crash while idle is logged, not held against the next call: that
    // call is served by the restarted process.
    this.lastCrash = err;
    this.logger?.error?.(inFlight.length ? err.message : `${err.message} (while idle; restarting)`);
    this.#maybeRestart();
  }

  #maybeRestart() {
    const now = Date.now();
    this.restartTimes = this.restartTimes.filter((t) => now - t < 60_000);
    if (this.restartTimes.length >= this.maxRestarts) {
      this.logger?.error?.(`lossless: engine process crashed ${this.restartTimes.length} times in a minute; not restarting until the next call`);
      return;
    }
    this.restartTimes.push(now);
    this.restarts++;
    this.start().catch((err) => this.logger?.error?.(`lossless: restart failed: ${err.message}`));
  }

  #onLine(child, line) {
    if (!line.trim()) return;
    let msg;
    try {
      msg = JSON.parse(line);
    } catch {
      this.logger?.warn?.(`lossless: unparsable line from the engine: ${line.slice(0, 200)}`);
      return;
    }
    if (typeof msg.method === "string") {
      this.#onServerMessage(child, msg);
      return;
    }
    const p = this.pending.get(msg.id);
    if (!p) return; // answered after we gave up (aborted)
    this.pending.delete(msg.id);
    if (msg.error) p.reject(new BridgeError(p.method, msg.error));
    else p.resolve(msg.result);
    this.#syncRef();
  }

  #write(child, obj) {
    if (!child || child.exitCode !== null || child.stdin.destroyed) return false;
    child.stdin.write(JSON.stringify(obj) + "\n");
    return true;
  }

  #send(child, method, params, { signal, callbacks, hostCallbacks } = {}) {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) {
        reject(abortError(signal));
        return;
      }
      const id = this.nextId++;
      const msg = { jsonrpc: "2.0", id, method, params };
      if (hostCallbacks?.length) msg.hostCallbacks = hostCallbacks;
      let onAbort;
      const cleanup = () => signal?.removeEventListener("abort", onAbort);
      this.pending.set(id, {
        method,
        callbacks,
        // The caller's async context: host callbacks run in it. OpenClaw
        // tracks async work per turn, and the child's stdout handler carries
        // the context of whichever call started the child (often a finished
        // turn, whose closed scope refuses new work).
        runIn: AsyncLocalStorage.snapshot(),
        resolve: (v) => {
          cleanup();
          resolve(v);
        },
        reject: (e) => {
          cleanup();
          reject(e);
        },
      });
      if (signal) {
        onAbort = () => {
          if (!this.pending.delete(id)) return;
          this.#write(child, { jsonrpc: "2.0", method: "$/cancelRequest", params: { id } });
          reject(abortError(signal));
          this.#syncRef();
        };
        signal.addEventListener("abort", onAbort, { once: true });
      }
      if (!this.#write(child, msg)) {
        this.pending.delete(id);
        cleanup();
        reject(new BridgeCrashError("lossless: engine process is not running"));
      }
      this.#syncRef();
    });
  }

  /**
   * Sends a request (starting the process if needed) and resolves with its
   * result. options.signal aborts it (the server gets $/cancelRequest);
   * options.hostCallbacks lists the callbacks offered to the server for
   * this request (the message's "hostCallbacks" field) and
   * options.callbacks maps the server's callback methods
   * ("host/llmComplete", ...) to functions (request, signal) => result.
   */
  async request(method, params, options = {}) {
    if (options.signal?.aborted) throw abortError(options.signal);
    await this.start();
    return this.#send(this.child, method, params, options);
  }

  async #onServerMessage(child, msg) {
    if (msg.method === "$/cancelRequest") {
      this.hostCalls.get(msg.params?.id)?.abort(abortError());
      return;
    }
    const reply = (body) => this.#write(child, { jsonrpc: "2.0", id: msg.id, ...body });
    if (msg.id === undefined) return; // an unknown notification
    const owner = this.pending.get(msg.params?.requestId);
    const fn = owner?.callbacks?.[msg.method];
    if (typeof fn !== "function") {
      reply({ error: { code: -32601, message: `host callback ${msg.method} is not available for this request` } });
      return;
    }
    const ac = new AbortController();
    this.hostCalls.set(msg.id, ac);
    this.#syncRef();
    try {
      const call = () => fn(msg.params?.request, ac.signal);
      const result = await (owner.runIn ? owner.runIn(call) : call());
      reply({ result: result ?? null });
    } catch (err) {
      reply({ error: { code: -32000, message: String(err?.message ?? err) } });
    } finally {
      this.hostCalls.delete(msg.id);
      this.#syncRef();
    }
  }

  /**
   * Ends the process at once without waiting (for process exit, where
   * nothing asynchronous runs): SIGTERM, which the engine handles as a
   * graceful shutdown; its stdin closes with this process anyway.
   */
  killNow() {
    this.closed = true;
    const child = this.child;
    if (child && child.exitCode === null && child.signalCode === null) {
      try {
        child.kill("SIGTERM");
      } catch {
        // already gone
      }
    }
  }

  /**
   * Disposes the engine and ends the process (SIGKILL after timeoutMs). The
   * client is closed for good.
   */
  async close({ timeoutMs = 5000 } = {}) {
    if (this.closed) return;
    // The caller waits for the process to end: hold the event loop meanwhile.
    this.#closing = true;
    this.#syncRef();
    const child = this.child;
    if (child && this.initResult) {
      try {
        await Promise.race([
          this.#send(child, "dispose", null),
          new Promise((r) => setTimeout(r, timeoutMs).unref()),
        ]);
      } catch {
        // dispose failing must not keep the process alive
      }
    }
    this.closed = true;
    if (!child || child.exitCode !== null) return;
    await new Promise((resolve) => {
      const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
      timer.unref();
      child.once("exit", () => {
        clearTimeout(timer);
        resolve();
      });
      child.stdin.end();
    });
  }
}

function textOf(message) {
  const c = message?.content;
  if (typeof c === "string") return c;
  if (Array.isArray(c)) {
    return c
      .filter((b) => b && b.type === "text" && typeof b.text === "string")
      .map((b) => b.text)
      .join("\n");
  }
  if (typeof message?.summary === "string") return message.summary;
  return "";
}

/**
 * Maps the engine's completion request ({system, messages, maxTokens}, with
 * OpenClaw messages) onto OpenClaw's llm.complete params ({systemPrompt,
 * messages: [{role, content: string}], maxTokens, signal}). Other fields the
 * engine sends (model, temperature, purpose, ...) pass through.
 */
export function toLlmCompleteParams(req, signal) {
  const { system, messages, ...rest } = req ?? {};
  const out = { ...rest, purpose: rest.purpose ?? "lossless context engine", signal };
  if (system && out.systemPrompt === undefined) out.systemPrompt = system;
  out.messages = (messages ?? []).map((m) => ({
    role: m?.role === "assistant" || m?.role === "system" ? m.role : "user",
    content: textOf(m),
  }));
  return out;
}
