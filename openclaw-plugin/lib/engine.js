// The OpenClaw ContextEngine object that forwards every lifecycle call to
// the Go engine process.
//
// OpenClaw calls the engine factory afresh for every logical turn (and per
// compaction, subagent, doctor run), and runs register() also for read-only
// discovery (`openclaw plugins list`). So the factory is cheap and
// synchronous: its `info` is static (lib/info.js), and the engine process
// lives at module scope, shared by every engine and tool of this process,
// started by the first call that needs it. dispose() at the end of a turn
// leaves it running; it ends with the Node process.

import { resolveBinary } from "./binary.js";
import { BridgeClient, toLlmCompleteParams } from "./client.js";
import { ENGINE_INFO, ENGINE_METHODS, engineInfo } from "./info.js";
import { loadTranscriptReader, readParams, transcriptTarget } from "./transcript.js";
import { toWire } from "./wire.js";
import { withModelMaxTokens } from "./model.js";

export { toWire };

// Clients by command and config: one process per store (Badger admits one
// process per directory). Module scope: they outlive engines.
//
// The pool lives on globalThis, not in this module: OpenClaw may load the
// plugin's modules more than once in one process (the engine and the tools
// through different loaders), and two pools would start two processes on one
// store, the second failing on Badger's directory lock.
const shared = (globalThis[Symbol.for("lossless.openclaw-plugin")] ??= { pool: new Map(), exitHook: false });
const pool = shared.pool; // key -> BridgeClient

function installExitHook() {
  if (shared.exitHook) return;
  shared.exitHook = true;
  // The child holds no reference on the event loop while idle (client.js),
  // so the process can end; when it does, the child is told to end too.
  process.once("exit", () => {
    for (const client of pool.values()) client.killNow();
  });
}

/** The methods whose calls may read the session transcript back. */
const TRANSCRIPT_METHODS = new Set(["bootstrap", "maintain", "compact"]);

/**
 * Resolves the plugin config into the shared client for its command and
 * engine config, creating it (not starting it) on first use.
 *
 * @param {object} [pluginConfig] plugins.entries.lossless.config: the
 *   engine's config, plus `bridge` ({command, args, env, maxRestarts,
 *   startTimeoutMs}) and `uiAddr` (the explorer's 127.0.0.1:PORT) for the
 *   plugin itself.
 * @param {object} [logger] api.logger.
 * @returns {BridgeClient}
 */
export function sharedClient(pluginConfig, logger) {
  const { bridge = {}, uiAddr, ...engineConfig } = pluginConfig ?? {};
  // bridge.command, else $LOSSLESS_BIN, else the matching platform
  // package's binary, else lossless on PATH (lib/binary.js); throws when
  // there is none.
  const { command } = resolveBinary({ bridge });
  // The engine process also serves the memory explorer (`lossless serve
  // --ui`) on loopback, at uiAddr, else (with the default arguments) on a
  // free port: the Control UI's Memory tab (lib/memory-tab.js) proxies it;
  // its URL, with the token, is logged.
  const ui = uiAddr ?? (bridge.args ? undefined : "127.0.0.1:0");
  const args = [...(bridge.args ?? ["serve", "--stdio"]), ...(ui ? ["--ui", ui] : [])];
  // The store and every engine setting come from the config; the factory's
  // agentDir/workspaceDir are not sent (the engine reads neither when the
  // server names the store), so every agent of the process shares one child.
  // host "openclaw" tells the engine that its host offers its own model
  // (runtimeContext.llm.complete): with no summarizer kind configured, it
  // summarizes with it, the extractive summarizer as fallback.
  const initialize = { config: engineConfig, host: "openclaw" };
  const key = JSON.stringify([command, args, bridge.env ?? null, initialize]);
  let client = pool.get(key);
  if (!client || client.closed) {
    client = new BridgeClient({
      command,
      args,
      env: bridge.env ? { ...process.env, ...bridge.env } : undefined,
      initialize,
      maxRestarts: bridge.maxRestarts ?? 5,
      startTimeoutMs: bridge.startTimeoutMs ?? 60_000,
      logger,
    });
    pool.set(key, client);
    installExitHook();
  }
  return client;
}

/**
 * Closes every engine process of this module (disposes the Go engine, then
 * ends the process). For tests and embedders; OpenClaw needs no call.
 */
export async function shutdownEngines() {
  const clients = [...pool.values()];
  pool.clear();
  await Promise.all(clients.map((c) => c.close().catch(() => {})));
}

const checked = new WeakSet();

/** Warns once per process when the binary's initialize differs from lib/info.js. */
function checkInit(client, init, logger) {
  if (checked.has(init)) return;
  checked.add(init);
  const missing = ENGINE_METHODS.filter((m) => !(init.methods ?? []).includes(m));
  if (missing.length) {
    logger?.warn?.(`lossless: the engine process (${client.command}) lacks ${missing.join(", ")}; those calls will fail. Update the binary.`);
  }
  if (JSON.stringify(init.info) !== JSON.stringify(ENGINE_INFO)) {
    logger?.warn?.(`lossless: the engine process (${client.command}) describes itself differently from this plugin's info; the plugin's is used. Binary and plugin versions may differ.`);
  }
}

/**
 * The host callbacks a call offers, as client options: the runtimeContext
 * functions, and the transcript read for bootstrap/maintain/compact when
 * the call names a session and OpenClaw's SDK is loadable.
 */
async function callOptions(method, params, logger) {
  const { wire, hostCallbacks } = toWire(params, method);
  const rc = params?.runtimeContext;
  const callbacks = {};
  if (hostCallbacks.includes("llm.complete")) {
    callbacks["host/llmComplete"] = (req, signal) => rc.llm.complete(toLlmCompleteParams(req, signal));
  }
  if (hostCallbacks.includes("rewriteTranscriptEntries")) {
    callbacks["host/rewriteTranscriptEntries"] = (req) => rc.rewriteTranscriptEntries(req);
  }
  if (TRANSCRIPT_METHODS.has(method)) {
    const target = transcriptTarget(params);
    const read = target && (await loadTranscriptReader(logger));
    if (read) {
      hostCallbacks.push("readTranscript");
      callbacks["host/readTranscript"] = (req) => read(readParams(target, req));
    }
  }
  return { wire, options: { signal: params?.abortSignal, hostCallbacks, callbacks } };
}

/**
 * Creates a ContextEngine backed by the shared lossless process. It returns
 * at once and starts nothing: the process starts with the first call.
 *
 * @param {object} opts
 * @param {object} [opts.pluginConfig] plugins.entries.lossless.config.
 * @param {object} [opts.logger] api.logger.
 * @param {object} [opts.hostConfig] OpenClaw's config (api.config): the
 *   model's maxTokens is read from it (lib/model.js), nothing else.
 */
export function createLosslessEngine({ pluginConfig, logger, hostConfig } = {}) {
  const client = sharedClient(pluginConfig, logger);

  const start = async () => {
    const init = await client.start();
    checkInit(client, init, logger);
    return init;
  };
  const call = async (method, params) => {
    if (params?.abortSignal?.aborted) throw params.abortSignal.reason ?? new Error("This operation was aborted");
    const { wire, options } = await callOptions(method, params, logger);
    await start();
    return client.request(method, wire, options);
  };

  const engine = {
    info: engineInfo(),
    ingest: (p) => call("ingest", p),
    assemble: (p) => call("assemble", withModelMaxTokens(hostConfig, p)),
    compact: (p) => call("compact", p),
    bootstrap: (p) => call("bootstrap", p),
    maintain: (p) => call("maintain", p),
    ingestBatch: (p) => call("ingestBatch", p),
    afterTurn: async (p) => {
      // When the engine reads only the turn's new messages, send just those
      // rather than the whole (growing) session view every turn.
      const init = await start();
      if (init.afterTurnNewMessagesOnly && Array.isArray(p?.messages)) {
        const pre = Math.min(Math.max(p.prePromptMessageCount ?? 0, 0), p.messages.length);
        p = { ...p, messages: p.messages.slice(pre), prePromptMessageCount: 0 };
      }
      await call("afterTurn", p);
    },
    commitTurn: (p) => call("commitTurn", p),
    prepareSubagentSpawn: async (p) => {
      const res = await call("prepareSubagentSpawn", p);
      if (!res?.rollbackId) return undefined;
      let rolledBack = false;
      return {
        rollback: async () => {
          if (rolledBack) return;
          rolledBack = true;
          await client.request("rollbackSubagentSpawn", { rollbackId: res.rollbackId });
        },
      };
    },
    onSubagentEnded: async (p) => {
      await call("onSubagentEnded", p);
    },
    // The end of a logical turn: the shared process stays for the next one.
    dispose: async () => {},
  };
  for (const m of ["bootstrap", "maintain", "ingestBatch", "afterTurn", "commitTurn", "prepareSubagentSpawn", "onSubagentEnded"]) {
    if (!ENGINE_METHODS.includes(m)) delete engine[m];
  }
  // Diagnostics for tests and troubleshooting (not part of the contract).
  Object.defineProperty(engine, "lossless", {
    enumerable: false,
    value: {
      get pid() {
        return client.pid;
      },
      get restarts() {
        return client.restarts;
      },
      /** The memory explorer's URL (with its token) once the process printed it (uiAddr). */
      get uiUrl() {
        return client.uiUrl;
      },
      methods: [...ENGINE_METHODS],
      client,
    },
  });
  return engine;
}
