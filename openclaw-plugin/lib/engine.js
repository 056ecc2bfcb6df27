// The OpenClaw ContextEngine object that forwards every lifecycle call to
// the Go engine process.

import { BridgeClient } from "./client.js";

// Clients shared by engines with the same command and config: one process
// per store (Badger allows one process per directory).
const pool = new Map(); // key -> {client, refs}

const HOST_ONLY = new Set(["abortSignal"]);

/**
 * Turns OpenClaw params into the JSON the server expects: drops the abort
 * signal, turns availableTools (a Set) into an array, and removes the
 * runtimeContext functions (listed in hostCallbacks instead).
 */
export function toWire(params) {
  if (params == null || typeof params !== "object") return { wire: params ?? null, hostCallbacks: [] };
  const wire = {};
  const hostCallbacks = [];
  for (const [k, v] of Object.entries(params)) {
    if (HOST_ONLY.has(k) || typeof v === "function") continue;
    if (k === "availableTools" && v != null && typeof v !== "string" && typeof v[Symbol.iterator] === "function") {
      wire[k] = [...v];
    } else if (k === "runtimeContext" && v && typeof v === "object") {
      const rc = {};
      for (const [rk, rv] of Object.entries(v)) {
        if (rk === "rewriteTranscriptEntries") {
          if (typeof rv === "function") hostCallbacks.push("rewriteTranscriptEntries");
          continue;
        }
        if (rk === "llm") {
          if (typeof rv?.complete === "function") hostCallbacks.push("llm.complete");
          continue;
        }
        if (typeof rv === "function") continue;
        rc[rk] = rv;
      }
      wire[k] = rc;
    } else {
      wire[k] = v;
    }
  }
  return { wire, hostCallbacks };
}

function poolKey(o) {
  return JSON.stringify([o.command, o.args, o.env ?? null, o.initialize]);
}

/**
 * Creates a ContextEngine backed by the lossless process.
 *
 * @param {object} opts
 * @param {object} [opts.pluginConfig] plugins.entries.lossless.config: the
 *   engine's config, plus `bridge` ({command, args, env, maxRestarts}) for
 *   the plugin itself.
 * @param {string} [opts.agentDir] the factory context's agentDir.
 * @param {string} [opts.workspaceDir] the factory context's workspaceDir.
 * @param {object} [opts.logger] api.logger.
 */
export async function createLosslessEngine({ pluginConfig, agentDir, workspaceDir, logger } = {}) {
  const { bridge = {}, ...engineConfig } = pluginConfig ?? {};
  const command = bridge.command ?? process.env.LOSSLESS_BIN ?? "lossless";
  const args = bridge.args ?? ["serve", "--stdio"];
  const env = bridge.env ? { ...process.env, ...bridge.env } : undefined;
  const initialize = { config: engineConfig };
  if (agentDir) initialize.agentDir = agentDir;
  if (workspaceDir) initialize.workspaceDir = workspaceDir;
  const key = poolKey({ command, args, env: bridge.env, initialize });
  let entry = pool.get(key);
  if (!entry) {
    const client = new BridgeClient({
      command,
      args,
      env,
      initialize,
      maxRestarts: bridge.maxRestarts ?? 5,
      startTimeoutMs: bridge.startTimeoutMs ?? 60_000,
      logger,
    });
    entry = { client, refs: 0 };
    pool.set(key, entry);
  }
  let init;
  try {
    init = await entry.client.start();
  } catch (err) {
    if (entry.refs === 0) {
      pool.delete(key);
      await entry.client.close({ timeoutMs: 1000 }).catch(() => {});
    }
    throw err;
  }
  entry.refs++;
  const client = entry.client;
  const methods = new Set(init.methods ?? []);

  const call = (method, params) => {
    const { wire, hostCallbacks } = toWire(params);
    return client.request(method, wire, {
      signal: params?.abortSignal,
      runtimeContext: params?.runtimeContext,
      hostCallbacks,
    });
  };

  let disposed = false;
  const engine = {
    info: init.info,
    async ingest(params) {
      return call("ingest", params);
    },
    async assemble(params) {
      return call("assemble", params);
    },
    async compact(params) {
      return call("compact", params);
    },
  };
  const optional = {
    bootstrap: (p) => call("bootstrap", p),
    maintain: (p) => call("maintain", p),
    ingestBatch: (p) => call("ingestBatch", p),
    afterTurn: async (p) => {
      // When the engine reads only the turn's new messages, send just those
      // rather than the whole (growing) session view every turn.
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
  };
  for (const [name, fn] of Object.entries(optional)) {
    if (methods.has(name)) engine[name] = fn;
  }
  // dispose releases this engine's share of the process; the last one
  // disposes the Go engine and ends the process.
  engine.dispose = async () => {
    if (disposed) return;
    disposed = true;
    entry.refs--;
    if (entry.refs <= 0 && pool.get(key) === entry) {
      pool.delete(key);
      await client.close();
    }
  };
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
      methods: [...methods],
      client,
    },
  });
  return engine;
}
