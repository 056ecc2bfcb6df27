// The model's output cap, from OpenClaw's config, for the engine's budgets.
//
// OpenClaw's transport sends the model the output cap
// min(model maxTokens, window − its estimate of the request − 1)
// (OPENCLAW-RUNTIME.md §3b): the engine keeps that cap free in every
// context it assembles, so it must know maxTokens. OpenClaw does not pass it
// to a context engine; the plugin reads it from the model's entry in
// OpenClaw's config (models.providers.<provider>.models[] {id, maxTokens})
// and sends it, alone, as runtimeContext.modelMaxTokens. A model found
// nowhere in the config (a catalog model) sends nothing: the engine then
// keeps the turn's compaction reserve free (hostRequest.outputTokens
// overrides both).

/**
 * Returns the maxTokens OpenClaw's config gives the call's model, or
 * undefined. The model is the call's `model` (its id) under
 * runtimeSettings.model.provider, else runtimeSettings.model.resolved; a
 * "provider/id" model names its provider itself.
 *
 * @param {object} [config] OpenClaw's config (api.config).
 * @param {object} [params] the assemble call's params.
 * @returns {number|undefined}
 */
export function modelMaxTokens(config, params) {
  const providers = config?.models?.providers;
  if (providers == null || typeof providers !== "object") return undefined;
  const rsModel = params?.runtimeSettings?.model ?? {};
  let id = typeof params?.model === "string" && params.model ? params.model : rsModel.resolved ?? rsModel.requested;
  if (typeof id !== "string" || !id) return undefined;
  let provider = rsModel.provider;
  if (!provider && id.includes("/")) [provider, id] = [id.slice(0, id.indexOf("/")), id.slice(id.indexOf("/") + 1)];
  const lookIn = provider && providers[provider] ? [providers[provider]] : Object.values(providers);
  for (const p of lookIn) {
    const models = Array.isArray(p?.models) ? p.models : [];
    for (const m of models) {
      const mid = typeof m === "string" ? m : m?.id;
      if (mid !== id && `${provider}/${mid}` !== id) continue;
      const n = m?.maxTokens;
      if (typeof n === "number" && Number.isFinite(n) && n > 0) return Math.floor(n);
    }
  }
  return undefined;
}

/**
 * The assemble params with runtimeContext.modelMaxTokens added when the
 * config names the model's maxTokens (params unchanged otherwise).
 */
export function withModelMaxTokens(config, params) {
  const n = modelMaxTokens(config, params);
  if (n === undefined || params == null || typeof params !== "object") return params;
  return { ...params, runtimeContext: { ...(params.runtimeContext ?? {}), modelMaxTokens: n } };
}
