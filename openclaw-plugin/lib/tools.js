// The engine's recall tools (lcm_grep, lcm_describe, lcm_expand) as
// OpenClaw agent tools. Their definitions (name, description, JSON Schema
// parameters) are the Go engine's, in tools.json (generated from
// `lossless tools --json`; test/tools.test.js checks they match). A call is
// the JSON-RPC request `tools/call` to the shared engine process, bound to
// the session of the run that offered the tool.

import { readFileSync } from "node:fs";

import { sharedClient } from "./engine.js";

/** The tool definitions: [{name, description, parameters}]. */
export const TOOL_DEFS = Object.freeze(JSON.parse(readFileSync(new URL("./tools.json", import.meta.url), "utf8")));

/** The tool names, as listed under contracts.tools in openclaw.plugin.json. */
export const TOOL_NAMES = Object.freeze(TOOL_DEFS.map((t) => t.name));

const LABELS = {
  lcm_grep: "Search history",
  lcm_describe: "Describe summary",
  lcm_expand: "Expand summary",
};

function str(v) {
  return typeof v === "string" && v !== "" ? v : undefined;
}

/**
 * Builds one tool for the session of ctx (OpenClaw's
 * OpenClawPluginToolContext: agentId, sessionKey, sessionId, ...).
 *
 * @param {{name: string, description: string, parameters: object}} def
 * @param {object} ctx the tool factory context.
 * @param {{pluginConfig?: object, logger?: object}} opts
 */
export function createTool(def, ctx, { pluginConfig, logger } = {}) {
  const session = {};
  const agentId = str(ctx?.agentId);
  const sessionKey = str(ctx?.sessionKey);
  const sessionId = str(ctx?.sessionId);
  if (agentId) session.agentId = agentId;
  if (sessionKey) session.sessionKey = sessionKey;
  if (sessionId) session.sessionId = sessionId;
  return {
    name: def.name,
    label: LABELS[def.name] ?? def.name,
    description: def.description,
    parameters: structuredClone(def.parameters),
    // Keep the tool model-visible under OpenClaw's tool search (on by
    // default since 2026.9: `tools.toolSearch` unset is mode "tools").
    // Without it the tool is only a catalog entry reachable through
    // tool_call, and the engine's prompt text and summaries name it directly.
    // OpenClaw reads this field in shouldCatalogTool (tool-search-catalog);
    // the manifest's toolMetadata has no such switch.
    catalogMode: "direct-only",
    async execute(_toolCallId, params, signal) {
      const client = sharedClient(pluginConfig, logger);
      const args = params && typeof params === "object" && !Array.isArray(params) ? params : {};
      let res;
      try {
        res = await client.request("tools/call", { name: def.name, arguments: args, ...session }, { signal });
      } catch (err) {
        if (signal?.aborted) throw err;
        // OpenClaw turns a throw into an error tool result (isError) whose
        // text is the message; AgentTool.execute: "Throw on failure instead
        // of encoding errors in content".
        throw new Error(`${def.name} failed: ${err?.message ?? err}`, { cause: err });
      }
      const text = typeof res?.text === "string" ? res.text : JSON.stringify(res ?? null);
      return {
        content: [{ type: "text", text }],
        details: { tool: def.name, ...session },
      };
    },
  };
}

/**
 * Registers the tools with OpenClaw: one factory per tool, named in the
 * registration (the loader checks names against contracts.tools before it
 * runs any factory).
 */
export function registerTools(api) {
  for (const def of TOOL_DEFS) {
    api.registerTool((ctx) => createTool(def, ctx, { pluginConfig: api.pluginConfig, logger: api.logger }), { name: def.name });
  }
}
