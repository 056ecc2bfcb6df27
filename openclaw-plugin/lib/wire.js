// What crosses from OpenClaw to the engine process: only the fields the Go
// engine reads. OpenClaw's params carry much more (runtimeContext.config is
// the whole OpenClaw config, provider API keys included; skills snapshots;
// helper functions), none of which may reach the child's stdin.
//
// The field lists are the JSON names of the Go param types in
// core/types.go (BootstrapParams, MaintainParams, ...); test/wire.test.js
// checks them against that file.

/** The top-level fields forwarded per method (core/types.go). */
export const PARAM_FIELDS = Object.freeze({
  bootstrap: ["sessionId", "sessionKey", "sessionTarget", "sessionFile", "runtimeSettings", "runtimeContext"],
  maintain: ["sessionId", "sessionKey", "sessionTarget", "sessionFile", "reason", "runtimeSettings", "runtimeContext"],
  ingest: ["sessionId", "sessionKey", "message", "isHeartbeat"],
  ingestBatch: ["sessionId", "sessionKey", "messages", "isHeartbeat"],
  afterTurn: [
    "sessionId",
    "sessionKey",
    "sessionTarget",
    "sessionFile",
    "messages",
    "prePromptMessageCount",
    "autoCompactionSummary",
    "isHeartbeat",
    "tokenBudget",
    "runtimeSettings",
    "runtimeContext",
  ],
  assemble: [
    "sessionId",
    "sessionKey",
    "messages",
    "tokenBudget",
    "availableTools",
    "citationsMode",
    "model",
    "prompt",
    "runtimeSettings",
    "runtimeContext",
  ],
  compact: [
    "sessionId",
    "sessionKey",
    "agentId",
    "sessionTarget",
    "sessionFile",
    "tokenBudget",
    "force",
    "currentTokenCount",
    "compactionTarget",
    "customInstructions",
    "runtimeSettings",
    "runtimeContext",
  ],
  commitTurn: [
    "advancementKey",
    "admission",
    "terminal",
    "messages",
    "sessionId",
    "sessionKey",
    "sessionTarget",
    "runtimeSettings",
    "runtimeContext",
    "isHeartbeat",
  ],
  prepareSubagentSpawn: [
    "parentSessionKey",
    "childSessionKey",
    "contextMode",
    "parentSessionId",
    "parentSessionFile",
    "childSessionId",
    "childSessionFile",
    "ttlMs",
  ],
  onSubagentEnded: ["childSessionKey", "reason"],
});

/**
 * The runtimeContext keys forwarded (plain JSON values the engine reads or
 * may read). Everything else, config and skills included, stays in Node; the
 * functions (llm.complete, rewriteTranscriptEntries) become host callbacks.
 */
export const RUNTIME_CONTEXT_FIELDS = Object.freeze([
  "tokenBudget",
  "currentTokenCount",
  "modelContextWindow",
  "contextWindow",
  "provider",
  "modelId",
  "transcriptStorage",
  "allowDeferredCompactionExecution",
  "promptCache",
  "rotateTranscript",
  // Read by lossless/projection.go (hosts with persistent backend threads).
  "contextProjection",
  "threadBootstrap",
  // The typed session identity, as on the top level.
  "sessionTarget",
  // The model's output cap, which the plugin adds to assemble from
  // OpenClaw's config (lib/model.js).
  "modelMaxTokens",
]);

const SESSION_TARGET_FIELDS = ["agentId", "sessionId", "sessionKey", "storePath", "threadId"];
// core.EntryAnchor / core.AdmissionAnchor.
const ANCHOR_FIELDS = [
  "agentId",
  "sessionId",
  "sessionKey",
  "storePath",
  "generation",
  "entryId",
  "rawSeq",
  "effectiveParentId",
  "activeMessagePosition",
  "idempotencyKey",
];
// core.RuntimeSettings, two levels.
const RUNTIME_SETTINGS_FIELDS = {
  schemaVersion: null,
  runtime: ["host", "mode", "harnessId", "runtimeId"],
  model: ["requested", "resolved", "provider", "family"],
  contextEngineSelection: ["selectedId", "source"],
  executionHost: ["id", "label"],
  limits: ["promptTokenBudget", "maxOutputTokens"],
  diagnostics: ["fallbackReason", "degradedReason"],
};
// transcriptStorage is {kind}; promptCache is OpenClaw's
// ContextEnginePromptCacheInfo.
const RUNTIME_CONTEXT_OBJECTS = {
  transcriptStorage: ["kind"],
  promptCache: ["retention", "lastCallUsage", "observation", "lastCacheTouchAt", "expiresAt"],
  sessionTarget: SESSION_TARGET_FIELDS,
};

const ALL_FIELDS = [...new Set(Object.values(PARAM_FIELDS).flat())];

function isPlainObject(v) {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

/** Copies the listed keys of obj whose values are defined and not functions. */
function pick(obj, keys) {
  if (!isPlainObject(obj)) return obj;
  const out = {};
  for (const k of keys) {
    const v = obj[k];
    if (v !== undefined && typeof v !== "function") out[k] = v;
  }
  return out;
}

function runtimeSettings(rs) {
  if (!isPlainObject(rs)) return rs;
  const out = {};
  for (const [k, sub] of Object.entries(RUNTIME_SETTINGS_FIELDS)) {
    const v = rs[k];
    if (v === undefined || typeof v === "function") continue;
    out[k] = sub && isPlainObject(v) ? pick(v, sub) : v;
  }
  return out;
}

function runtimeContext(rc, hostCallbacks) {
  const out = {};
  if (!isPlainObject(rc)) return out;
  if (typeof rc.rewriteTranscriptEntries === "function") hostCallbacks.push("rewriteTranscriptEntries");
  if (typeof rc.llm?.complete === "function") hostCallbacks.push("llm.complete");
  for (const k of RUNTIME_CONTEXT_FIELDS) {
    const v = rc[k];
    if (v === undefined || typeof v === "function") continue;
    const sub = RUNTIME_CONTEXT_OBJECTS[k];
    out[k] = sub && isPlainObject(v) ? pick(v, sub) : v;
  }
  return out;
}

function toArray(v) {
  if (v != null && typeof v !== "string" && typeof v[Symbol.iterator] === "function") return [...v];
  return v;
}

const FIELD_FILTERS = {
  sessionTarget: (v) => pick(v, SESSION_TARGET_FIELDS),
  runtimeSettings,
  admission: (v) => pick(v, [...ANCHOR_FIELDS, "logicalTurnId", "role"]),
  terminal: (v) => pick(v, ANCHOR_FIELDS),
  availableTools: toArray,
};

/**
 * Turns OpenClaw's params for `method` into the JSON the server reads: the
 * method's fields only (PARAM_FIELDS; every method's fields when method is
 * unknown), filtered one level down where the Go type is a struct;
 * availableTools (a Set) becomes an array; the abort signal and functions
 * stay behind. hostCallbacks lists the runtimeContext functions offered
 * ("rewriteTranscriptEntries", "llm.complete").
 *
 * @returns {{wire: object|null, hostCallbacks: string[]}}
 */
export function toWire(params, method) {
  const hostCallbacks = [];
  if (params == null || typeof params !== "object") return { wire: params ?? null, hostCallbacks };
  const fields = PARAM_FIELDS[method] ?? ALL_FIELDS;
  const wire = {};
  for (const k of fields) {
    const v = params[k];
    if (v === undefined || typeof v === "function") continue;
    if (k === "runtimeContext") {
      wire[k] = runtimeContext(v, hostCallbacks);
      continue;
    }
    const filter = FIELD_FILTERS[k];
    wire[k] = filter ? filter(v) : v;
  }
  return { wire, hostCallbacks };
}
