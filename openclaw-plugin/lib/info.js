// What the Go engine says about itself on `initialize`, known before the
// engine process runs: OpenClaw reads `info` (and checks which optional
// methods exist) synchronously when it creates the engine, and the process
// is started only by the first call that needs it. test/plugin.test.js
// checks both against the real binary's `initialize` result.
//
// Sources: lossless/engine.go Info(), lossless/commit.go declareLifecycle(),
// core/engine.go (HostParamNames, OpAgentRun, CapAssembleBeforePrompt), and
// the methods bridge/server.go lists for *lossless.Engine.

/** The lossless engine's info (core.Info as JSON). */
export const ENGINE_INFO = Object.freeze({
  id: "lossless",
  name: "Lossless Context Engine",
  version: "0.1.0",
  ownsCompaction: true,
  turnMaintenanceMode: "foreground",
  // OpenClaw drops any of its six host parameters an engine does not list.
  acceptedHostParams: ["sessionKey", "prompt", "runtimeSettings", "sessionTarget", "runtimeContext", "abortSignal"],
  // Required by `openclaw agent` for the durable (commitTurn) path.
  transcriptSemantics: {
    currentTurnFence: "before-current-turn-entry-v1",
    turnAdvancementIdempotency: "atomic-idempotent-v1",
  },
  hostRequirements: {
    "agent-run": {
      requiredCapabilities: ["assemble-before-prompt"],
      unsupportedMessage:
        "The lossless context engine builds the model's context from its store in assemble before every prompt; this host cannot call assemble before the prompt. Run the agent on a host that can (the embedded runtime), or select the legacy engine.",
    },
  },
});

/**
 * The optional contract methods the Go engine implements (the server's
 * `initialize` result lists these plus the required ingest, assemble,
 * compact, and info/dispose). OpenClaw changes its behaviour depending on
 * which methods exist, so the engine object has exactly these.
 */
export const ENGINE_METHODS = Object.freeze([
  "afterTurn",
  "bootstrap",
  "commitTurn",
  "ingestBatch",
  "maintain",
  "onSubagentEnded",
  "prepareSubagentSpawn",
]);

/** A fresh, mutable copy of ENGINE_INFO (the host may annotate it). */
export function engineInfo() {
  return structuredClone(ENGINE_INFO);
}
