// The session transcript read the engine asks for (host/readTranscript).
// OpenClaw 2026.9.6 keeps transcripts in its SQLite store; the only way to
// read one is in-process, through the plugin SDK subpath
// `openclaw/plugin-sdk/session-transcript-runtime`. The engine process
// cannot, so the plugin reads and relays.
//
// Resolution: OpenClaw's plugin loader installs a module resolve hook
// (Module.registerHooks, dist/plugin-module-loader-cache-*.mjs
// installOpenClawPluginSdkNativeResolver) that maps `openclaw/plugin-sdk/*`
// to its own dist/plugin-sdk/*.js for modules under the plugin's package
// root, linked (`plugins install -l`) plugins included; jiti-loaded plugins
// get the same alias map (dist/sdk-alias-*.mjs). As a fallback (a loader
// without the hook), the subpath is resolved from the running openclaw
// package (process.argv[1] is its openclaw.mjs; a package may import itself
// by name). Outside OpenClaw (tests) neither works and the callback is not
// offered.

import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

export const SDK_SUBPATH = "openclaw/plugin-sdk/session-transcript-runtime";

async function importSdk() {
  try {
    return await import(SDK_SUBPATH);
  } catch (first) {
    const argv1 = process.argv[1];
    if (!argv1) throw first;
    try {
      const resolved = createRequire(argv1).resolve(SDK_SUBPATH);
      return await import(pathToFileURL(resolved).href);
    } catch {
      throw first;
    }
  }
}

async function defaultLoader() {
  const sdk = await importSdk();
  if (typeof sdk?.readSessionTranscriptVisibleMessageDelta !== "function") {
    throw new Error(`${SDK_SUBPATH} has no readSessionTranscriptVisibleMessageDelta`);
  }
  return sdk.readSessionTranscriptVisibleMessageDelta;
}

let loader = defaultLoader;
let loaded = null; // Promise<function|null>

/**
 * Resolves to OpenClaw's readSessionTranscriptVisibleMessageDelta, or null
 * when it cannot be loaded (not running inside OpenClaw). Loaded once.
 */
export function loadTranscriptReader(logger) {
  if (!loaded) {
    loaded = Promise.resolve()
      .then(() => loader())
      .catch((err) => {
        logger?.info?.(`lossless: transcript reads unavailable (${err?.message ?? err}); the engine imports no host history`);
        return null;
      });
  }
  return loaded;
}

/**
 * Replaces the loader (tests): fn() resolves to a reader function, or
 * rejects when none is available. Without an argument, restores the
 * default.
 */
export function setTranscriptReaderLoader(fn) {
  loader = fn ?? defaultLoader;
  loaded = null;
}

function str(v) {
  return typeof v === "string" && v !== "" ? v : undefined;
}

/**
 * The session a call's transcript reads are bound to: its sessionTarget
 * ({agentId, sessionId, sessionKey, storePath}), completed from the call's
 * sessionKey / sessionId / agentId; the agent id of an "agent:<id>:…" key
 * when none is given. Null when no session id and key can be found.
 */
export function transcriptTarget(params) {
  const t = params?.sessionTarget && typeof params.sessionTarget === "object" ? params.sessionTarget : {};
  const rt = params?.runtimeContext?.sessionTarget && typeof params.runtimeContext.sessionTarget === "object" ? params.runtimeContext.sessionTarget : {};
  const sessionKey = str(t.sessionKey) ?? str(params?.sessionKey) ?? str(rt.sessionKey);
  const sessionId = str(t.sessionId) ?? str(params?.sessionId) ?? str(rt.sessionId);
  if (!sessionKey || !sessionId) return null;
  let agentId = str(t.agentId) ?? str(params?.agentId) ?? str(rt.agentId);
  if (!agentId && sessionKey.startsWith("agent:")) agentId = str(sessionKey.split(":")[1]);
  const storePath = str(t.storePath) ?? str(rt.storePath);
  const out = { sessionKey, sessionId };
  if (agentId) out.agentId = agentId;
  if (storePath) out.storePath = storePath;
  return out;
}

/**
 * The SDK read params for one engine request ({cursor?, maxMessages?,
 * maxBytes?}) on target; a null cursor means from the start.
 */
export function readParams(target, request) {
  const p = { ...target };
  const r = request && typeof request === "object" ? request : {};
  if (typeof r.cursor === "string" && r.cursor !== "") p.cursor = r.cursor;
  if (Number.isInteger(r.maxMessages) && r.maxMessages > 0) p.maxMessages = r.maxMessages;
  if (Number.isInteger(r.maxBytes) && r.maxBytes > 0) p.maxBytes = r.maxBytes;
  return p;
}
