// Which `lossless` binary the plugin runs, and whether its version is the
// plugin's.
//
// The npm package ships no binary itself: OpenClaw installs plugins with
// `npm install --ignore-scripts`, so nothing may be downloaded at install
// time. The binaries come as one optional npm package per platform
// (@lossless-engine/lossless-<os>-<cpu>, npm's os/cpu names), listed in
// optionalDependencies; npm installs the one matching the host, and
// OpenClaw checks it did (openclaw.install.requiredPlatformPackages).
// The Linux binaries are static (built without cgo): one package serves
// glibc and musl.

import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(import.meta.url);

/** The npm scope of the plugin and its platform packages. */
export const SCOPE = "@lossless-engine";

/** The plugin's own package.json (name and version). */
export const PLUGIN_PACKAGE = Object.freeze(JSON.parse(fs.readFileSync(new URL("../package.json", import.meta.url), "utf8")));

/**
 * The platforms a release ships a binary for: `${process.platform}-${process.arch}`
 * → the npm package holding it. The release command (cmd/lossless-release)
 * builds the same list.
 */
export const PLATFORM_PACKAGES = Object.freeze({
  "linux-x64": `${SCOPE}/lossless-linux-x64`,
  "linux-arm64": `${SCOPE}/lossless-linux-arm64`,
  "darwin-x64": `${SCOPE}/lossless-darwin-x64`,
  "darwin-arm64": `${SCOPE}/lossless-darwin-arm64`,
  "win32-x64": `${SCOPE}/lossless-win32-x64`,
});

/** The binary's file name inside a platform package. */
export function binaryFile(platform = process.platform) {
  return path.join("bin", platform === "win32" ? "lossless.exe" : "lossless");
}

/** No binary to run on this host: thrown by register(), so OpenClaw reports the plugin as failed to load. */
export class LosslessPlatformError extends Error {
  constructor(message) {
    super(message);
    this.name = "LosslessPlatformError";
  }
}

function isExecutable(file, platform) {
  try {
    const st = fs.statSync(file);
    if (!st.isFile()) return false;
    if (platform !== "win32") fs.accessSync(file, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** `lossless` on PATH (a binary built from source or `go install`ed), or null. */
function onPath(env, platform) {
  const names = platform === "win32" ? ["lossless.exe", "lossless"] : ["lossless"];
  for (const dir of (env.PATH ?? env.Path ?? "").split(path.delimiter)) {
    if (!dir) continue;
    for (const n of names) {
      const p = path.join(dir, n);
      if (isExecutable(p, platform)) return p;
    }
  }
  return null;
}

/**
 * The directory of an installed npm package, resolved from this plugin's
 * own directory the way Node resolves its imports (the package sits in the
 * plugin's node_modules or, hoisted, in a parent's), or null.
 */
function packageDir(name, resolve) {
  try {
    return path.dirname(resolve(`${name}/package.json`));
  } catch {
    return null;
  }
}

/**
 * Finds the engine binary, in this order:
 *   1. the config's `bridge.command` (always wins),
 *   2. $LOSSLESS_BIN,
 *   3. the binary of the platform package matching this host (the default
 *      of an npm install),
 *   4. `lossless` on PATH (a source build, a linked checkout of the plugin).
 * Throws a LosslessPlatformError naming the platform and what to do when
 * none is found. Reads the filesystem only: starts nothing.
 *
 * @param {object} [opts]
 * @param {object} [opts.bridge] plugins.entries.lossless.config.bridge.
 * @param {object} [opts.env] the environment (process.env).
 * @param {string} [opts.platform] process.platform.
 * @param {string} [opts.arch] process.arch.
 * @param {(id: string) => string} [opts.resolve] resolves a module id to a file (require.resolve from this plugin).
 * @returns {{command: string, source: "bridge.command"|"LOSSLESS_BIN"|"package"|"PATH", packageName?: string}}
 */
export function resolveBinary({ bridge = {}, env = process.env, platform = process.platform, arch = process.arch, resolve = require.resolve } = {}) {
  if (bridge.command) return { command: bridge.command, source: "bridge.command" };
  if (env.LOSSLESS_BIN) return { command: env.LOSSLESS_BIN, source: "LOSSLESS_BIN" };
  const key = `${platform}-${arch}`;
  const packageName = PLATFORM_PACKAGES[key];
  let problem;
  if (packageName) {
    const dir = packageDir(packageName, resolve);
    if (dir) {
      const file = path.join(dir, binaryFile(platform));
      if (isExecutable(file, platform)) return { command: file, source: "package", packageName };
      problem = `its platform package ${packageName} is installed at ${dir} but holds no executable ${binaryFile(platform)} (a damaged install)`;
    } else {
      problem = `its platform package ${packageName} is not installed (npm skipped the optional dependency, or this plugin was not installed from npm)`;
    }
  } else {
    problem = `no platform package of ${PLUGIN_PACKAGE.name} matches this host (${SCOPE}/lossless-<platform> exists for ${Object.keys(PLATFORM_PACKAGES).join(", ")})`;
  }
  const fromPath = onPath(env, platform);
  if (fromPath) return { command: fromPath, source: "PATH" };
  throw new LosslessPlatformError(
    `lossless: no engine binary for this platform (${key}): ${problem}, and no lossless on PATH. ` +
      (packageName
        ? `Reinstall the plugin so npm installs ${packageName} (openclaw plugins install ${PLUGIN_PACKAGE.name} --force), or `
        : "") +
      `build the binary (go install github.com/lossless-engine/contextengine/cmd/lossless@latest) and set ` +
      `plugins.entries.lossless.config.bridge.command to its path (or put it on PATH).`,
  );
}

/** A version string of a development build (a checkout), which any version accepts. */
export function isDevVersion(v) {
  return typeof v !== "string" || v === "" || /-dev(\b|$)/.test(v);
}

/**
 * The error message when the engine binary's version (initialize's
 * server.version) is not the plugin's: a released plugin runs the binary
 * of the same release. Null when they agree, or when either is a
 * development build (a checkout's plugin, or a binary built from source
 * without a stamped version, reports "<version>-dev"), or when the server
 * is not the lossless binary.
 *
 * @param {{name?: string, version?: string}} [server] initialize's server field.
 * @param {string} command the binary that was run.
 * @param {string} [pluginVersion] this plugin's version (package.json).
 */
export function versionMismatch(server, command, pluginVersion = PLUGIN_PACKAGE.version) {
  if (server?.name !== "lossless") return null;
  const got = String(server.version ?? "").replace(/^v/, "");
  if (isDevVersion(pluginVersion) || isDevVersion(got) || got === pluginVersion) return null;
  return (
    `lossless: the engine binary ${command} is version ${got}, this plugin (${PLUGIN_PACKAGE.name}) is version ${pluginVersion}: ` +
    `they must be the same release. Reinstall the plugin (openclaw plugins install ${PLUGIN_PACKAGE.name}@${pluginVersion} --force), ` +
    `which brings its own binary, or point plugins.entries.lossless.config.bridge.command at lossless ${pluginVersion} ` +
    `(go install github.com/lossless-engine/contextengine/cmd/lossless@v${pluginVersion}).`
  );
}
