// The model's output cap read from OpenClaw's config (lib/model.js) and
// sent alone in assemble's runtimeContext: the engine keeps it free.
import { test } from "node:test";
import assert from "node:assert/strict";

import { modelMaxTokens, withModelMaxTokens } from "../lib/model.js";
import { toWire } from "../lib/wire.js";

const config = {
  models: {
    providers: {
      fake: { baseUrl: "http://127.0.0.1:1/v1", apiKey: "sk-secret", models: [{ id: "fake-model", contextWindow: 24000, maxTokens: 1024 }] },
      other: { models: [{ id: "fake-model", maxTokens: 4096 }, { id: "no-cap" }] },
    },
  },
};
const rs = (provider, resolved) => ({ schemaVersion: 1, model: { provider, resolved } });

test("maxTokens of the call's model under its provider", () => {
  assert.equal(modelMaxTokens(config, { model: "fake-model", runtimeSettings: rs("fake", "fake-model") }), 1024);
  assert.equal(modelMaxTokens(config, { model: "fake-model", runtimeSettings: rs("other", "fake-model") }), 4096);
  assert.equal(modelMaxTokens(config, { runtimeSettings: rs("fake", "fake-model") }), 1024, "runtimeSettings.model.resolved when the call names no model");
  assert.equal(modelMaxTokens(config, { model: "fake/fake-model" }), 1024, "a provider/id model");
});

test("nothing when the config does not say", () => {
  assert.equal(modelMaxTokens(config, { model: "no-cap", runtimeSettings: rs("other", "no-cap") }), undefined);
  assert.equal(modelMaxTokens(config, { model: "claude-x", runtimeSettings: rs("anthropic", "claude-x") }), undefined);
  assert.equal(modelMaxTokens({}, { model: "fake-model" }), undefined);
  assert.equal(modelMaxTokens(undefined, { model: "fake-model" }), undefined);
  const p = { model: "claude-x", tokenBudget: 5 };
  assert.equal(withModelMaxTokens(config, p), p, "params unchanged");
});

test("the cap reaches the wire alone: no other config value", () => {
  const p = withModelMaxTokens(config, { sessionId: "s", model: "fake-model", tokenBudget: 900, runtimeSettings: rs("fake", "fake-model") });
  const { wire } = toWire(p, "assemble");
  assert.deepEqual(wire.runtimeContext, { modelMaxTokens: 1024 });
  assert.ok(!JSON.stringify(wire).includes("sk-secret"));
  assert.ok(!JSON.stringify(wire).includes("127.0.0.1:1"));
});
