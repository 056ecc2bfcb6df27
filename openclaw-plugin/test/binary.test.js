// Which binary the plugin runs (lib/binary.js): bridge.command, then
// $LOSSLESS_BIN, then the platform package npm installed beside the plugin,
// then lossless on PATH, else a clear error at registration; and the
// version check between a released plugin and its binary.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { BridgeClient } from "../lib/client.js";
import { LosslessPlatformError, PLATFORM_PACKAGES, PLUGIN_PACKAGE, binaryFile, resolveBinary, versionMismatch } from "../lib/binary.js";

const PLUGIN_DIR = fileURLToPath(new URL("..", import.meta.url));

function tmp(t) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "lossless-binary-"));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

// An npm project as OpenClaw's installer lays it out: the plugin and, hoisted
// beside it, the platform package with its binary. Returns the plugin's
// require.resolve (what the plugin's own resolution uses).
function project(t, { platformKey = "linux-x64", withBinary = true, platform = "linux" } = {}) {
  const root = tmp(t);
  const nm = path.join(root, "node_modules");
  const pluginDir = path.join(nm, "@lossless-engine", "openclaw-lossless");
  fs.mkdirSync(pluginDir, { recursive: true });
  fs.writeFileSync(path.join(pluginDir, "package.json"), JSON.stringify({ name: "@lossless-engine/openclaw-lossless" }));
  const name = PLATFORM_PACKAGES[platformKey];
  const pkgDir = path.join(nm, ...name.split("/"));
  fs.mkdirSync(path.join(pkgDir, "bin"), { recursive: true });
  fs.writeFileSync(path.join(pkgDir, "package.json"), JSON.stringify({ name, version: "1.0.0" }));
  const bin = path.join(pkgDir, binaryFile(platform));
  if (withBinary) fs.writeFileSync(bin, "#!/bin/sh\n", { mode: 0o755 });
  return { resolve: createRequire(path.join(pluginDir, "index.js")).resolve, bin, pkgDir, name };
}

test("the five platforms of a release, with npm's os/cpu names", () => {
  assert.deepEqual(Object.keys(PLATFORM_PACKAGES).sort(), ["darwin-arm64", "darwin-x64", "linux-arm64", "linux-x64", "win32-x64"]);
  // package.json lists each as an optional dependency and a required platform package.
  const names = Object.values(PLATFORM_PACKAGES).sort();
  assert.deepEqual(Object.keys(PLUGIN_PACKAGE.optionalDependencies).sort(), names);
  assert.deepEqual([...PLUGIN_PACKAGE.openclaw.install.requiredPlatformPackages].sort(), names);
  for (const v of Object.values(PLUGIN_PACKAGE.optionalDependencies)) assert.equal(v, PLUGIN_PACKAGE.version, "platform packages pinned to the plugin's version");
  assert.equal(PLUGIN_PACKAGE.openclaw.install.npmSpec, PLUGIN_PACKAGE.name);
  assert.match(PLUGIN_PACKAGE.openclaw.install.minHostVersion, /^>=2026\.9\.6$/);
  const manifest = JSON.parse(fs.readFileSync(path.join(PLUGIN_DIR, "openclaw.plugin.json"), "utf8"));
  assert.equal(manifest.id, "lossless", "the plugin id (the config key) stays");
  assert.equal(manifest.version, PLUGIN_PACKAGE.version);
});

test("the platform package's binary is the default", (t) => {
  const p = project(t);
  const got = resolveBinary({ env: { PATH: "" }, platform: "linux", arch: "x64", resolve: p.resolve });
  assert.deepEqual(got, { command: p.bin, source: "package", packageName: "@lossless-engine/lossless-linux-x64" });
  // windows: bin/lossless.exe
  const w = project(t, { platformKey: "win32-x64", platform: "win32" });
  assert.equal(resolveBinary({ env: {}, platform: "win32", arch: "x64", resolve: w.resolve }).command, w.bin);
  assert.match(w.bin, /lossless\.exe$/);
});

test("bridge.command wins, then $LOSSLESS_BIN, over the platform package", (t) => {
  const p = project(t);
  const base = { platform: "linux", arch: "x64", resolve: p.resolve };
  assert.deepEqual(resolveBinary({ ...base, bridge: { command: "/opt/l" }, env: { LOSSLESS_BIN: "/env/l" } }), { command: "/opt/l", source: "bridge.command" });
  assert.deepEqual(resolveBinary({ ...base, env: { LOSSLESS_BIN: "/env/l" } }), { command: "/env/l", source: "LOSSLESS_BIN" });
});

test("no platform package: lossless on PATH, else an error naming the platform and what to do", (t) => {
  const p = project(t, { platformKey: "linux-arm64" }); // another platform's package only
  const dir = tmp(t);
  const onPath = path.join(dir, "lossless");
  fs.writeFileSync(onPath, "#!/bin/sh\n", { mode: 0o755 });
  assert.deepEqual(resolveBinary({ env: { PATH: dir }, platform: "linux", arch: "x64", resolve: p.resolve }), { command: onPath, source: "PATH" });

  assert.throws(
    () => resolveBinary({ env: { PATH: "" }, platform: "linux", arch: "x64", resolve: p.resolve }),
    (err) => {
      assert.ok(err instanceof LosslessPlatformError);
      assert.match(err.message, /no engine binary for this platform \(linux-x64\)/);
      assert.match(err.message, /@lossless-engine\/lossless-linux-x64 is not installed/);
      assert.match(err.message, /openclaw plugins install @lossless-engine\/openclaw-lossless --force/);
      assert.match(err.message, /bridge\.command/);
      return true;
    },
  );
  // A platform no release ships.
  assert.throws(
    () => resolveBinary({ env: { PATH: "" }, platform: "freebsd", arch: "x64", resolve: p.resolve }),
    /no engine binary for this platform \(freebsd-x64\): no platform package .* matches this host .*go install github\.com\/lossless-engine\/contextengine\/cmd\/lossless@latest.*bridge\.command/,
  );
  // The package is there but its binary is not (or not executable).
  const broken = project(t, { withBinary: false });
  assert.throws(
    () => resolveBinary({ env: { PATH: "" }, platform: "linux", arch: "x64", resolve: broken.resolve }),
    /\(linux-x64\): its platform package @lossless-engine\/lossless-linux-x64 is installed at .* but holds no executable bin\/lossless/,
  );
  fs.writeFileSync(broken.bin, "#!/bin/sh\n", { mode: 0o644 });
  assert.throws(() => resolveBinary({ env: { PATH: "" }, platform: "linux", arch: "x64", resolve: broken.resolve }), /holds no executable/);
});

test("register() fails with that error when this host has no binary, and starts nothing", () => {
  // A clean process: no $LOSSLESS_BIN, nothing on PATH, and no platform
  // package beside this checkout's plugin.
  const script = `
    const { default: plugin } = await import(${JSON.stringify(path.join(PLUGIN_DIR, "index.js"))});
    let registered = false;
    try {
      plugin.register({ pluginConfig: {}, logger: console, registerContextEngine() { registered = true; }, registerTool() {} });
      console.log("REGISTERED");
    } catch (err) {
      console.log(err.name + ": " + err.message + (registered ? " (after registering)" : ""));
    }`;
  const r = spawnSync(process.execPath, ["--input-type=module", "-e", script], { env: { PATH: "" }, encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  const key = `${process.platform}-${process.arch}`;
  assert.match(r.stdout, new RegExp(`^LosslessPlatformError: lossless: no engine binary for this platform \\(${key}\\)`));
  assert.doesNotMatch(r.stdout, /after registering/);
  // With bridge.command it registers.
  const ok = spawnSync(process.execPath, ["--input-type=module", "-e", script.replace("pluginConfig: {}", 'pluginConfig: { bridge: { command: "/x/lossless" } }')], { env: { PATH: "" }, encoding: "utf8" });
  assert.equal(ok.stdout.trim(), "REGISTERED", ok.stderr);
});

test("versionMismatch: a released plugin needs its own release's binary", () => {
  const lossless = (version) => ({ name: "lossless", version });
  assert.equal(versionMismatch(lossless("1.2.3"), "/b", "1.2.3"), null);
  assert.equal(versionMismatch(lossless("v1.2.3"), "/b", "1.2.3"), null, "go install's v prefix");
  assert.equal(versionMismatch(lossless("0.1.0-dev"), "/b", "1.2.3"), null, "a source build runs with any plugin");
  assert.equal(versionMismatch(lossless("1.2.3"), "/b", "0.1.0-dev"), null, "a checkout's plugin runs any binary");
  assert.equal(versionMismatch({ name: "fake" }, "/b", "1.2.3"), null, "not the lossless binary");
  const msg = versionMismatch(lossless("1.2.2"), "/opt/lossless", "1.2.3");
  assert.match(msg, /engine binary \/opt\/lossless is version 1\.2\.2, this plugin \(@lossless-engine\/openclaw-lossless\) is version 1\.2\.3/);
  assert.match(msg, /openclaw plugins install @lossless-engine\/openclaw-lossless@1\.2\.3 --force/);
  assert.match(msg, /cmd\/lossless@v1\.2\.3/);
});

test("a binary of another release is refused at start, with that message", async (t) => {
  const dir = tmp(t);
  const server = path.join(dir, "server.mjs");
  // A stand-in engine that reports its version like `lossless serve`.
  fs.writeFileSync(
    server,
    `import { createInterface } from "node:readline";
     createInterface({ input: process.stdin }).on("line", (line) => {
       const m = JSON.parse(line);
       if (m.method === "initialize") process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id: m.id,
         result: { protocolVersion: 1, info: {}, methods: [], server: { name: "lossless", version: process.argv[2] } } }) + "\\n");
     });`,
  );
  const refused = new BridgeClient({ command: process.execPath, args: [server, "2.0.0"], pluginVersion: "2.0.1" });
  await assert.rejects(refused.start(), { name: "LosslessBridgeCrashError", message: /is version 2\.0\.0, this plugin .* is version 2\.0\.1/ });
  assert.equal(refused.pid, undefined, "the refused process is not kept");
  await refused.close();

  const same = new BridgeClient({ command: process.execPath, args: [server, "2.0.1"], pluginVersion: "2.0.1" });
  t.after(() => same.close());
  const init = await same.start();
  assert.equal(init.server.version, "2.0.1");
});
