// OpenClaw plugin entry: registers the "lossless" context engine, which runs
// the Go engine (`lossless serve --stdio`) as a long-lived child process and
// forwards every lifecycle call to it over newline-delimited JSON-RPC 2.0.
//
// Select it in openclaw.json with plugins.slots.contextEngine = "lossless";
// its config is plugins.entries.lossless.config (see openclaw.plugin.json).

import { createLosslessEngine } from "./lib/engine.js";

export const ENGINE_ID = "lossless";

export { createLosslessEngine };

export default {
  id: "lossless",
  name: "Lossless context engine",
  description:
    "Keeps every message verbatim in a local store and assembles the model's context from recent messages plus expandable summaries.",
  register(api) {
    // Starts nothing: register() also runs for read-only discovery. The
    // engine process starts with the first call that needs it.
    api.registerContextEngine(ENGINE_ID, () => createLosslessEngine({ pluginConfig: api.pluginConfig, logger: api.logger }));
  },
};
