// End to end with embedded turns, `openclaw agent --local` (no gateway):
// the plugin installed as the README says, history written while the slot
// was `legacy`, then the slot switched to `lossless`: the next bootstrap must
// import that history (through the plugin's SDK transcript read) exactly
// once. Also: `openclaw plugins list` starts no engine process, the slot
// resolves to lossless on every --local turn, and no secret reaches the
// engine process. Each --local turn costs ~30 s of CPU on 2 cores, so this
// file keeps to four.

import { describe, before, after, test } from "node:test";
import assert from "node:assert/strict";
import path from "node:path";
import { OpenClawEnv, skipReason, freePort, contentText, degradationLines, jsonEqual, INSTALL_ARGS, PLUGIN_DIR } from "./harness.mjs";
import { startFakeModel } from "./fake-model.mjs";

const skip = skipReason();

const KEY = "agent:main:e2e-import";
const LEGACY = [
  "LEGACY-ONE: the archive password hint is 'blue heron'.",
  "LEGACY-TWO: the build server is called orchard-3.",
];
const LOSSLESS = ["NEW-ONE: what did I say the build server was called?", "NEW-TWO: thanks, that is all for now."];

describe("OpenClaw agent --local + lossless plugin, end to end", { skip }, () => {
  let env;
  let fake;
  const S = { errors: [] };

  before(
    async () => {
      env = new OpenClawEnv({ name: "local" });
      fake = await startFakeModel({ logFile: path.join(env.root, "model-requests.jsonl") });
      env.writeConfig(env.baseConfig({ fake, gatewayPort: await freePort() }));
      S.install = await env.install();
      if (S.install.code !== 0) throw new Error(`plugin install failed (${S.install.code}):\n${S.install.stdout}\n${S.install.stderr}`);
      S.configAfterInstall = env.readConfig();

      // History written before the engine is selected.
      env.selectEngine("legacy", env.engineConfig({}));
      for (const m of LEGACY) {
        const t = await env.turn({ sessionKey: KEY, message: m, local: true });
        if (t.code !== 0) S.errors.push(`legacy turn exited ${t.code}: ${t.stderr.slice(-1500)}`);
      }
      S.startsAfterLegacy = env.starts().length;
      S.legacyTranscript = await env.transcript(KEY);

      // The slot switched to lossless; discovery must start nothing.
      env.selectEngine("lossless");
      const before = env.starts().length;
      S.list = await env.run(["plugins", "list"], { label: "plugins list" });
      S.listJson = await env.run(["plugins", "list", "--json"], { label: "plugins list --json" });
      S.startsDuringList = env.starts().length - before;

      for (const m of LOSSLESS) {
        const t = await env.turn({ sessionKey: KEY, message: m, local: true });
        if (t.code !== 0) S.errors.push(`lossless turn exited ${t.code}: ${t.stderr.slice(-1500)}`);
      }
      await env.waitChildrenExited();
      S.transcript = await env.transcript(KEY);
      S.children = env.children();
    },
    { timeout: 15 * 60_000 },
  );

  after(async () => {
    await fake?.close();
    await env?.cleanup();
  });

  test("the README's install command links the plugin and selects it", () => {
    assert.equal(S.install.code, 0, S.install.stderr);
    assert.deepEqual(INSTALL_ARGS.slice(0, 3), ["plugins", "install", "-l"]);
    const cfg = S.configAfterInstall;
    assert.ok(cfg.plugins?.load?.paths?.some((p) => path.resolve(p) === PLUGIN_DIR), `plugins.load.paths does not name ${PLUGIN_DIR}: ${JSON.stringify(cfg.plugins)}`);
    assert.equal(cfg.plugins?.entries?.lossless?.enabled, true, "plugins.entries.lossless.enabled");
    assert.equal(cfg.plugins?.slots?.contextEngine, "lossless", "the install selects the engine (plugins.slots.contextEngine)");
  });

  test("l. `openclaw plugins list` starts no engine process", () => {
    assert.equal(S.list.code, 0, S.list.stderr);
    assert.match(S.list.stdout, /lossless/, "plugins list does not show the plugin");
    assert.equal(S.startsDuringList, 0, "plugins list started an engine process");
  });

  test("a. the slot resolves to lossless on every --local turn (no legacy degradation)", () => {
    const problems = S.errors.filter((e) => e.startsWith("lossless turn"));
    const lossless = env.turns.filter((t) => LOSSLESS.includes(t.message));
    assert.equal(lossless.length, LOSSLESS.length);
    for (const t of lossless) {
      const deg = degradationLines(t.stderr);
      if (deg.length) problems.push(`turn "${t.message}": ${deg.join("\n")}`);
    }
    const calls = S.children.flatMap((c) => c.calls);
    for (const m of LOSSLESS) {
      if (!calls.some((c) => c.method === "assemble" && c.params?.prompt === m)) problems.push(`"${m}": no assemble call carried the prompt`);
      if (!calls.some((c) => c.method === "commitTurn" && c.result && !c.error && (c.params?.messages ?? []).some((x) => x.role === "user" && contentText(x.content) === m)))
        problems.push(`"${m}": no successful commitTurn carried the user message`);
    }
    assert.deepEqual(problems, []);
  });

  test("c. history written under legacy is imported at the next bootstrap, once", () => {
    assert.deepEqual(S.errors.filter((e) => e.startsWith("legacy")), []);
    assert.equal(S.legacyTranscript.messages.length, 2 * LEGACY.length, "the legacy turns did not write their messages");
    assert.equal(S.startsAfterLegacy, 0, "an engine process ran while the slot was legacy");
    const boots = S.children.flatMap((c) => c.calls).filter((c) => c.method === "bootstrap");
    assert.ok(boots.length > 0, "bootstrap was never called");
    const exp = env.exportSession(S.transcript.sessionId);
    for (const m of LEGACY) {
      const n = exp.messages.filter((x) => x.role === "user" && contentText(x.content) === m).length;
      assert.equal(n, 1, `"${m}" is stored ${n} times`);
    }
    for (const lm of S.legacyTranscript.messages) {
      assert.ok(exp.messages.some((x) => jsonEqual(x, lm)), `a legacy message is not stored as OpenClaw wrote it: ${JSON.stringify(lm).slice(0, 300)}`);
    }
  });

  test("b. every message is in the store, JSON-equal to OpenClaw's transcript, in order", () => {
    const tr = S.transcript;
    const exp = env.exportSession(tr.sessionId);
    assert.equal(exp.messages.length, tr.messages.length, `transcript ${tr.messages.length} messages, store ${exp.messages.length}`);
    tr.messages.forEach((m, i) => assert.ok(jsonEqual(m, exp.messages[i]), `message ${i}: ${JSON.stringify(m).slice(0, 300)} != ${JSON.stringify(exp.messages[i]).slice(0, 300)}`));
  });

  test("k. no secret of OpenClaw's config reaches the engine process", () => {
    assert.ok(fake.requests().some((r) => r.auth === `Bearer ${env.apiKey}`), "the model server never saw the configured apiKey");
    assert.ok(S.children.length > 0, "no engine process ran");
    for (const c of S.children) for (const s of env.secrets) assert.ok(!c.stdinRaw.includes(s), `engine process ${c.wrapperPid} received a secret`);
  });
});
