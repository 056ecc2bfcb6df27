// The user's install path, end to end and offline (issue 38 point 3): the
// npm packages the release command built for this commit are published to
// a local registry (Verdaccio, .ci/npm-registry.sh); then, with no Go
// toolchain on PATH and no plugin settings, real OpenClaw 2026.9.6 runs
// `openclaw plugins install @lossless-engine/openclaw-lossless` against
// that registry, a gateway runs turns through the engine (the slot is
// lossless, the messages are stored, the context is assembled from the
// store), `openclaw plugins list` shows it; then the next version is
// published, `openclaw plugins update lossless` installs it over the first,
// and every message stored before is still there, byte for byte. The
// plugin and the binary come from the registry: nothing of the checkout is
// loaded or run (only this test and the shared harness live there).
//
// Inputs (set by .ci/run's "install from npm" stage):
//   LOSSLESS_NPM_REGISTRY     the registry's URL
//   LOSSLESS_NPM_USERCONFIG   an npmrc with a token that may publish there
//   LOSSLESS_RELEASE_DIRS     two release directories (go run ./cmd/lossless-release -out DIR), ":"-separated, older first
//   OPENCLAW_ENTRY            openclaw.mjs (.ci/openclaw-setup.sh), run with this Node (>= 24.16)
//   LOSSLESS_TOKENIZER_DIR    the fake model's tokenizer (.ci/openclaw-setup.sh)
// Without them the test skips, saying what is missing; with
// LOSSLESS_E2E_REQUIRED=1 it fails instead.

import { describe, before, after, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";

import { OpenClawEnv, REPO, REQUIRED, freePort, contentText, degradationLines, chatRequests, requestsForPrompt, stripAnsi } from "../openclaw/harness.mjs";
import { startFakeModel, tokenizerProblem } from "../openclaw/fake-model.mjs";

const PLUGIN = "@lossless-engine/openclaw-lossless";
const PLATFORM = { "linux-x64": "lossless-linux-x64", "linux-arm64": "lossless-linux-arm64", "darwin-x64": "lossless-darwin-x64", "darwin-arm64": "lossless-darwin-arm64", "win32-x64": "lossless-win32-x64" }[`${process.platform}-${process.arch}`];

/** PATH without any directory holding a `go` executable. */
function pathWithoutGo(p) {
  return p
    .split(path.delimiter)
    .filter((d) => {
      if (!d) return false;
      try {
        fs.accessSync(path.join(d, "go"), fs.constants.X_OK);
        return false;
      } catch {
        return true;
      }
    })
    .join(path.delimiter);
}

function which(cmd, p) {
  for (const d of p.split(path.delimiter)) {
    try {
      fs.accessSync(path.join(d, cmd), fs.constants.X_OK);
      return path.join(d, cmd);
    } catch {}
  }
  return null;
}

function missing() {
  const [a, b] = process.versions.node.split(".").map(Number);
  if (a < 24 || (a === 24 && b < 16)) return `Node >= 24.16 is required (this is ${process.version})`;
  for (const k of ["LOSSLESS_NPM_REGISTRY", "LOSSLESS_NPM_USERCONFIG", "LOSSLESS_RELEASE_DIRS", "OPENCLAW_ENTRY"]) {
    if (!process.env[k]) return `${k} is not set (run this test through .ci/run's "install from npm" stage)`;
  }
  if (process.env.LOSSLESS_RELEASE_DIRS.split(":").length !== 2) return "LOSSLESS_RELEASE_DIRS must name two release directories";
  if (!PLATFORM) return `no platform package for ${process.platform}-${process.arch}`;
  if (tokenizerProblem) return `the fake model's tokenizer: ${tokenizerProblem}`;
  return null;
}

const why = missing();
if (why && REQUIRED) throw new Error(`install test cannot run: ${why}`);

/** The release directory's version (its plugin tarball's name) and tarballs, platform packages first. */
function release(dir) {
  const npmDir = path.join(dir, "npm");
  const tgz = fs.readdirSync(npmDir).filter((f) => f.endsWith(".tgz"));
  const plugin = tgz.find((f) => f.startsWith("lossless-engine-openclaw-lossless-"));
  assert.ok(plugin, `no plugin tarball in ${npmDir}`);
  const version = plugin.slice("lossless-engine-openclaw-lossless-".length, -".tgz".length);
  return { dir, version, tarballs: [...tgz.filter((f) => f !== plugin), plugin].map((f) => path.join(npmDir, f)) };
}

/** npm publish of each tarball to the local registry (the platform packages first, then the plugin). */
function publish(rel) {
  for (const t of rel.tarballs) {
    const r = spawnSync("npm", ["publish", t, "--access", "public", "--registry", process.env.LOSSLESS_NPM_REGISTRY, "--userconfig", process.env.LOSSLESS_NPM_USERCONFIG], { encoding: "utf8" });
    if (r.status !== 0) throw new Error(`npm publish ${path.basename(t)} failed (${r.status}):\n${r.stdout}\n${r.stderr}`);
  }
}

/** What `bin version` prints. */
function binaryVersion(bin) {
  return spawnSync(bin, ["version"], { encoding: "utf8" }).stdout ?? "";
}

/**
 * Watches /proc every 100 ms for processes running a lossless binary of
 * the platform package from under dir (OpenClaw runs the plugin from a copy
 * of its npm project, ~/.openclaw/tmp/plugin-captures/…, so the binary's
 * path is not the install's). stop() returns [{pid, exe, sha256}] of every
 * one seen, sha256 being the running executable's.
 */
function watchEngines(dir) {
  const seen = new Map();
  const suffix = path.join("@lossless-engine", PLATFORM, "bin", "lossless");
  const scan = () => {
    for (const pid of fs.readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
      if (seen.has(pid)) continue;
      try {
        const exe = fs.readlinkSync(`/proc/${pid}/exe`);
        if (!exe.startsWith(dir + path.sep) || !exe.endsWith(suffix)) continue;
        const sha256 = createHash("sha256").update(fs.readFileSync(`/proc/${pid}/exe`)).digest("hex");
        seen.set(pid, { pid: Number(pid), exe, sha256 });
      } catch {}
    }
  };
  scan();
  const timer = setInterval(scan, 100);
  return {
    stop() {
      clearInterval(timer);
      scan();
      return [...seen.values()];
    },
  };
}

/** The SHA-256 the release's SHA256SUMS gives this platform's binary. */
function releaseSum(rel) {
  const line = fs.readFileSync(path.join(rel.dir, "SHA256SUMS"), "utf8").split("\n").find((l) => l.endsWith(`  bin/${process.platform}-${process.arch}/lossless`));
  assert.ok(line, `no ${process.platform}-${process.arch} binary in ${rel.dir}/SHA256SUMS`);
  return line.split("  ")[0];
}

// An OpenClaw environment as a user has it: the harness's isolated HOME,
// with an ~/.npmrc naming the registry, and a PATH without Go.
class UserEnv extends OpenClawEnv {
  constructor(opts) {
    super(opts);
    this.userPath = pathWithoutGo([path.dirname(process.execPath), process.env.PATH ?? ""].join(path.delimiter));
    fs.writeFileSync(path.join(this.home, ".npmrc"), `registry=${process.env.LOSSLESS_NPM_REGISTRY}\n`);
    // The engine's default store: $XDG_DATA_HOME/lossless (no storeDir is configured).
    this.storeDir = path.join(this.home, ".local", "share", "lossless");
  }

  env(extra = {}) {
    return super.env({ PATH: this.userPath, ...extra });
  }

  /** The lossless binaries the npm install put in OpenClaw's state directory. */
  installedBinary() {
    const found = [];
    const walk = (dir, depth) => {
      if (depth > 8) return;
      let entries;
      try {
        entries = fs.readdirSync(dir, { withFileTypes: true });
      } catch {
        return;
      }
      for (const e of entries) {
        const p = path.join(dir, e.name);
        if (e.isDirectory()) walk(p, depth + 1);
        else if (e.name === "lossless" && p.endsWith(path.join("@lossless-engine", PLATFORM, "bin", "lossless"))) found.push(p);
      }
    };
    // OpenClaw's managed npm projects (~/.openclaw/npm/projects/<package>),
    // not the copies its install captures keep under ~/.openclaw/tmp.
    walk(path.join(this.stateDir, "npm"), 0);
    return found.sort();
  }
}

const K = "agent:main:install-path";

/** `lossless export` of the conversation of session key K (from `lossless sessions --all --json`), or null. */
function exportKey(env, sessions) {
  const conv = sessions.find((c) => c.key === K);
  return conv ? env.exportSession(conv.sessionIds.at(-1)) : null;
}
const FACT1 = "INSTALL-FACT-1: the deploy key lives in vault path kv/ops/deploy-7731.";
const FACT2 = "INSTALL-FACT-2: the staging database is called heron-db-42.";
const AFTER = "INSTALL-AFTER-UPGRADE: which vault path did I give for the deploy key?";

describe("install from npm: openclaw plugins install, turns, upgrade", { skip: why ?? false }, () => {
  let env;
  let fake;
  let v1;
  let v2;
  const S = { errors: [] };

  before(
    async () => {
      const [d1, d2] = process.env.LOSSLESS_RELEASE_DIRS.split(":");
      v1 = release(d1);
      v2 = release(d2);
      env = new UserEnv({ name: "install", openclaw: { cmd: process.execPath, args: [process.env.OPENCLAW_ENTRY] }, realBin: null });
      fake = await startFakeModel({ logFile: path.join(env.root, "model-requests.jsonl") });
      env.writeConfig(env.baseConfig({ fake, gatewayPort: await freePort() }));

      publish(v1);
      S.install = await env.run(["plugins", "install", PLUGIN, "--force", "--accept-capabilities"], { label: "install v1" });
      if (S.install.code !== 0) throw new Error(`openclaw plugins install ${PLUGIN} failed (${S.install.code}):\n${S.install.stdout}\n${S.install.stderr}`);
      S.config1 = env.readConfig();
      S.bins1 = env.installedBinary();
      S.list1 = await env.run(["plugins", "list", "--json"], { label: "plugins list --json" });
      S.listText = await env.run(["plugins", "list"], { label: "plugins list" });
      S.version1 = S.bins1.length ? binaryVersion(S.bins1[0]) : "";

      const watch1 = watchEngines(env.stateDir);
      await env.startGateway();
      for (const m of [FACT1, FACT2]) {
        const t = await env.turn({ sessionKey: K, message: m });
        if (t.code !== 0) S.errors.push(`turn "${m.slice(0, 30)}" exited ${t.code}: ${t.stderr.slice(-1500)}`);
      }
      await env.stopGateway();
      S.engineProcs1 = watch1.stop();
      S.degraded1 = degradationLines(env.gatewayOutput());
      env.realBin = S.bins1[0];
      S.sessions1 = env.storeSessions();
      S.export1 = exportKey(env, S.sessions1);

      // The next version: published, then installed over the first.
      publish(v2);
      S.update = await env.run(["plugins", "update", "lossless", "--accept-capabilities"], { label: "update to v2" });
      S.config2 = env.readConfig();
      S.bins2 = env.installedBinary();
      // The update installs into a new generation directory beside the first.
      S.bin2 = S.bins2.find((b) => binaryVersion(b).startsWith(`lossless ${v2.version} (`));
      S.version2 = S.bin2 ? binaryVersion(S.bin2) : "";
      S.list2 = await env.run(["plugins", "list", "--json"], { label: "plugins list --json (v2)" });

      const logFrom = env.gatewayOutput().length;
      const watch2 = watchEngines(env.stateDir);
      await env.startGateway();
      const t = await env.turn({ sessionKey: K, message: AFTER });
      if (t.code !== 0) S.errors.push(`turn after the upgrade exited ${t.code}: ${t.stderr.slice(-1500)}`);
      await env.stopGateway();
      S.engineProcs2 = watch2.stop();
      S.degraded2 = degradationLines(env.gatewayOutput().slice(logFrom));
      env.realBin = S.bin2 ?? S.bins2.at(-1);
      S.sessions2 = env.storeSessions();
      S.export2 = exportKey(env, S.sessions2);
      S.requests = chatRequests(fake);
    },
    { timeout: 15 * 60_000 },
  );

  after(async () => {
    await fake?.close();
    await env?.cleanup();
  });

  test("no Go toolchain on the user's PATH, and the default plugin settings", () => {
    assert.equal(which("go", env.userPath), null, `go is on the PATH the openclaw commands ran with: ${env.userPath}`);
    const entry = S.config1.plugins?.entries?.lossless;
    assert.equal(entry?.config?.bridge, undefined, "no bridge.command: the plugin finds its binary itself");
    assert.equal(entry?.config?.storeDir, undefined, "no storeDir: the default store");
  });

  test("openclaw plugins install <package> installs from the registry and selects the engine", () => {
    assert.equal(S.install.code, 0, S.install.stderr);
    assert.equal(S.config1.plugins?.slots?.contextEngine, "lossless", "the install selects the engine");
    assert.equal(S.config1.plugins?.entries?.lossless?.enabled, true);
    assert.equal(S.config1.plugins?.load?.paths, undefined, "nothing linked");
    // The binary came from the platform package, in OpenClaw's npm project, stamped with v1.
    assert.equal(S.bins1.length, 1, `installed lossless binaries: ${JSON.stringify(S.bins1)}`);
    assert.ok(S.bins1[0].startsWith(env.stateDir + path.sep) && !S.bins1[0].startsWith(REPO + path.sep));
    assert.match(S.version1, new RegExp(`^lossless ${v1.version.replace(/\./g, "\\.")} \\(`));
    assert.ok(!JSON.stringify(S.config1).includes(REPO), "the config names the checkout");
  });

  test("openclaw plugins list shows the plugin, loaded from the install", () => {
    assert.equal(S.list1.code, 0, S.list1.stderr);
    assert.equal(S.listText.code, 0, S.listText.stderr);
    assert.match(stripAnsi(S.listText.stdout), /lossless/);
    const json = JSON.parse(S.list1.stdout);
    const p = (json.plugins ?? json).find((x) => x.id === "lossless");
    assert.ok(p, `plugins list --json has no lossless: ${S.list1.stdout.slice(0, 2000)}`);
    assert.equal(p.version, v1.version);
    assert.equal(p.status, "loaded", JSON.stringify(p));
    assert.equal(p.kind, "context-engine");
    assert.deepEqual(p.toolNames, ["lcm_grep", "lcm_describe", "lcm_expand"]);
    assert.ok(p.rootDir.startsWith(path.join(env.stateDir, "npm") + path.sep), `the plugin is loaded from ${p.rootDir}, not OpenClaw's npm project`);
    assert.ok(!JSON.stringify(p).includes(REPO), "the plugin's record names the checkout");
    // OpenClaw sees the platform package installed beside it.
    const dep = p.dependencyStatus?.optionalDependencies?.find((d) => d.name === `@lossless-engine/${PLATFORM}`);
    assert.equal(dep?.installed, true, JSON.stringify(p.dependencyStatus));
    assert.equal(dep?.spec, v1.version);
  });

  test("turns run through the engine: the installed binary serves them, the messages are stored", () => {
    assert.deepEqual(S.errors, []);
    assert.deepEqual(S.degraded1, [], "the engine degraded to legacy");
    // The engine processes ran the published binary (its bytes: OpenClaw runs a copy of the install).
    assert.ok(S.engineProcs1.length >= 1, "no engine process ran a binary of the platform package");
    assert.deepEqual([...new Set(S.engineProcs1.map((p) => p.sha256))], [releaseSum(v1)], JSON.stringify(S.engineProcs1));
    assert.ok(S.export1, `nothing stored: ${JSON.stringify(S.sessions1)}`);
    for (const m of [FACT1, FACT2]) {
      const n = S.export1.messages.filter((x) => x.role === "user" && contentText(x.content) === m).length;
      assert.equal(n, 1, `"${m}" stored ${n} times`);
    }
    assert.ok(S.export1.messages.some((x) => x.role === "assistant"), "no assistant message stored");
  });

  test("the next version installs over it (openclaw plugins update) and finds every message", () => {
    assert.equal(S.update.code, 0, `${S.update.stdout}\n${S.update.stderr}`);
    assert.match(S.version2, new RegExp(`^lossless ${v2.version.replace(/\./g, "\\.")} \\(`), `installed binaries after the update: ${JSON.stringify(S.bins2)}`);
    const json = JSON.parse(S.list2.stdout);
    assert.equal((json.plugins ?? json).find((x) => x.id === "lossless")?.version, v2.version);
    assert.equal(S.config2.plugins?.slots?.contextEngine, "lossless");
    assert.deepEqual(S.degraded2, [], "the engine degraded to legacy after the upgrade");
    assert.ok(S.engineProcs2.length >= 1, "no engine process ran after the update");
    assert.deepEqual([...new Set(S.engineProcs2.map((p) => p.sha256))], [releaseSum(v2)], `after the update: ${JSON.stringify(S.engineProcs2)}`);
    // Every line v1 stored is still there, the same bytes, and the new turn after them.
    assert.ok(S.export2, "the conversation is gone after the upgrade");
    for (const line of S.export1.lines) assert.ok(S.export2.lines.includes(line), `lost after the upgrade: ${line.slice(0, 200)}`);
    assert.ok(S.export2.messages.some((x) => x.role === "user" && contentText(x.content) === AFTER));
    // The context of the turn after the upgrade was assembled from the store: it holds v1's facts.
    const reqs = requestsForPrompt({ requests: () => S.requests }, AFTER);
    assert.ok(reqs.length > 0, "no model request for the turn after the upgrade");
    const text = JSON.stringify(reqs[0].body.messages);
    assert.ok(text.includes("kv/ops/deploy-7731") && text.includes("heron-db-42"), "the turn after the upgrade did not see the earlier facts");
  });
});
