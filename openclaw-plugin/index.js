// OpenClaw plugin entry: registers the "lossless" context engine, which runs
// the Go engine (`lossless serve --stdio`) as a long-lived child process and
// forwards every lifecycle call to it over newline-delimited JSON-RPC 2.0,
// and the engine's recall tools lcm_grep, lcm_describe and lcm_expand.
//
// Select it in openclaw.json with plugins.slots.contextEngine = "lossless";
// its config is plugins.entries.lossless.config (see openclaw.plugin.json).
//
// register() starts nothing: it also runs for read-only discovery
// (`openclaw plugins list`). The engine process starts with the first
// engine call, tool call or Memory tab request that needs it. It does
// check that an engine binary exists for this host (by default the one of
// the platform package npm installed beside the plugin) and throws, naming
// the platform and what to do, when none does.

import { resolveBinary } from "./lib/binary.js";
import { createLosslessEngine, sharedClient } from "./lib/engine.js";
import { registerMemoryTab } from "./lib/memory-tab.js";
import { registerTools, TOOL_NAMES } from "./lib/tools.js";

export const ENGINE_ID = "lossless";

export { createLosslessEngine, TOOL_NAMES };

export default {
  id: "lossless",
  name: "Lossless context engine",
  description:
    "Keeps every message verbatim in a local store and assembles the model's context from recent messages plus expandable summaries.",
  register(api) {
    // Fails the plugin's load, with what to do, when no engine binary
    // exists for this host (lib/binary.js); reads files only.
    resolveBinary({ bridge: api.pluginConfig?.bridge });
    api.registerContextEngine(ENGINE_ID, () => createLosslessEngine({ pluginConfig: api.pluginConfig, logger: api.logger, hostConfig: api.config }));
    if (typeof api.registerTool === "function") registerTools(api);
    // The Memory tab in the Control UI (lib/memory-tab.js): registering
    // starts nothing; the first request to the tab starts the engine process.
    registerMemoryTab(api, { explorer: () => sharedClient(api.pluginConfig, api.logger).request("explorer", {}) });
  },
};
