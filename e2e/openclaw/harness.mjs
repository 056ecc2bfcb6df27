// Shared machinery of the OpenClaw end-to-end tests: an isolated OpenClaw
// installation (temporary HOME and state directory), the plugin installed
// the way the README says, a config pointing a custom OpenAI-compatible
// provider at the fake model server, `openclaw agent` turns (embedded with
// --local, or through a real `openclaw gateway run`), and readers for what
// happened: OpenClaw's SQLite transcripts, the engine store
// (`lossless export`), the fake server's request log, and the JSON-RPC
// traffic between the plugin and its child process (recorded by
// record-child.mjs, which the plugin runs as bridge.command).
//
// Prerequisites (see README.md): Node >= 24.16 running the tests, OpenClaw
// 2026.9.6 ($OPENCLAW_ENTRY = its openclaw.mjs, else `openclaw` on PATH),
// the fake model's o200k_base tokenizer ($LOSSLESS_TOKENIZER_DIR, the
// gpt-tokenizer package .ci/openclaw-setup.sh installs), Go (to build
// `lossless` when $LOSSLESS_BIN is unset). When one is missing
// the tests skip, unless $LOSSLESS_E2E_REQUIRED=1 (CI), where they fail.

import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { randomBytes } from "node:crypto";
import { tokenizerProblem } from "./fake-model.mjs";

export const E2E_DIR = path.dirname(fileURLToPath(import.meta.url));
export const REPO = path.resolve(E2E_DIR, "../..");
export const PLUGIN_DIR = path.join(REPO, "openclaw-plugin");
export const REQUIRED = process.env.LOSSLESS_E2E_REQUIRED === "1";
export const MODEL_ID = "fake-1";
export const PROVIDER_ID = "fake";
export const AGENT_ID = "main";

/** The exact install command the README gives (arguments after `openclaw`). */
export const INSTALL_ARGS = ["plugins", "install", "-l", PLUGIN_DIR, "--force", "--accept-capabilities"];

const ANSI = /\x1b\[[0-9;]*[A-Za-z]/g;
export const stripAnsi = (s) => String(s ?? "").replace(ANSI, "");

function nodeAtLeast(major, minor) {
  const [a, b] = process.versions.node.split(".").map(Number);
  return a > major || (a === major && b >= minor);
}

function which(cmd) {
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    if (!dir) continue;
    const p = path.join(dir, cmd);
    try {
      fs.accessSync(p, fs.constants.X_OK);
      return p;
    } catch {}
  }
  return null;
}

/**
 * What the tests need, or why they cannot run: {ok, reason, openclaw: {cmd,
 * args}}. `openclaw` is run as `node $OPENCLAW_ENTRY ...` with this Node
 * (OpenClaw needs >= 24.16 too), else as the `openclaw` found on PATH.
 */
export function prerequisites() {
  if (!nodeAtLeast(24, 16)) return { ok: false, reason: `Node >= 24.16 is required (this is ${process.version})` };
  let openclaw = null;
  const entry = process.env.OPENCLAW_ENTRY;
  if (entry) {
    if (!fs.existsSync(entry)) return { ok: false, reason: `OPENCLAW_ENTRY=${entry} does not exist` };
    openclaw = { cmd: process.execPath, args: [entry] };
  } else {
    const bin = which("openclaw");
    if (bin) openclaw = { cmd: bin, args: [] };
  }
  if (!openclaw) return { ok: false, reason: "OpenClaw not found: set OPENCLAW_ENTRY (run .ci/openclaw-setup.sh) or put openclaw on PATH" };
  if (!process.env.LOSSLESS_BIN && !which("go")) return { ok: false, reason: "neither LOSSLESS_BIN nor go is available" };
  // The fake model counts tokens with o200k_base (gpt-tokenizer, installed by .ci/openclaw-setup.sh).
  if (tokenizerProblem) return { ok: false, reason: `the fake model's tokenizer: ${tokenizerProblem}` };
  return { ok: true, openclaw };
}

/**
 * The skip option for a test file: false when the tests can run; a reason
 * (skipped) when they cannot; throws in CI ($LOSSLESS_E2E_REQUIRED=1).
 */
export function skipReason() {
  const p = prerequisites();
  if (p.ok) return false;
  if (REQUIRED) throw new Error(`OpenClaw end-to-end tests cannot run: ${p.reason}`);
  return p.reason;
}

let builtBin = null;
/** $LOSSLESS_BIN, else `go build -o <tmp>/lossless ./cmd/lossless` (once per process). */
export function losslessBin() {
  if (process.env.LOSSLESS_BIN) return path.resolve(process.env.LOSSLESS_BIN);
  if (builtBin) return builtBin;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "lossless-e2e-bin-"));
  process.once("exit", () => fs.rmSync(dir, { recursive: true, force: true }));
  const out = path.join(dir, "lossless");
  const r = spawnSync("go", ["build", "-o", out, "./cmd/lossless"], { cwd: REPO, stdio: ["ignore", "pipe", "pipe"], encoding: "utf8" });
  if (r.status !== 0) throw new Error(`go build ./cmd/lossless failed:\n${r.stdout}${r.stderr}`);
  builtBin = out;
  return out;
}

/** A free TCP port on 127.0.0.1. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export async function waitFor(fn, { timeoutMs = 30_000, intervalMs = 100, what = "condition" } = {}) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(intervalMs);
  }
}

/** Parses newline-delimited JSON, skipping a torn last line (a killed writer). */
export function parseJsonl(text) {
  const out = [];
  for (const line of String(text).split("\n")) {
    if (!line.trim()) continue;
    try {
      out.push(JSON.parse(line));
    } catch {
      out.push({ __unparsed: line });
    }
  }
  return out;
}

const readIf = (p) => (fs.existsSync(p) ? fs.readFileSync(p, "utf8") : "");

/** The text of a message's content (string, or the text parts of an array). */
export function contentText(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((p) => (typeof p === "string" ? p : typeof p?.text === "string" ? p.text : "")).join("\n");
  return "";
}

/** Deep JSON equality (key order ignored). */
export function jsonEqual(a, b) {
  return JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));
}
export function canonical(v) {
  if (Array.isArray(v)) return v.map(canonical);
  if (v && typeof v === "object") {
    const o = {};
    for (const k of Object.keys(v).sort()) o[k] = canonical(v[k]);
    return o;
  }
  return v;
}

/**
 * One isolated OpenClaw installation. Everything lives under `root`
 * (removed by cleanup() unless $LOSSLESS_E2E_KEEP=1): home/ (HOME, with the
 * state directory home/.openclaw), store/ (the engine store), rec/ (the
 * child's recorded traffic), logs.
 */
/**
 * The tests' default `tools` section: the minimal profile plus `read` and the
 * engine's tools. No `toolSearch` key, so OpenClaw's default tool search
 * (mode "tools") is on: the engine's tools must stay in the request's
 * `tools` (the plugin marks them direct-only) while other tools are deferred.
 */
export const LEAN_TOOLS = Object.freeze({
  profile: "minimal",
  alsoAllow: Object.freeze(["read", "lcm_grep", "lcm_describe", "lcm_expand"]),
});

export class OpenClawEnv {
  // realBin: the lossless binary the recorder runs and the store readers
  // use; default losslessBin(). null: none yet (e2e/install sets it to the
  // binary OpenClaw installed from the registry).
  constructor({ name, openclaw, realBin }) {
    this.name = name;
    this.openclaw = openclaw ?? prerequisites().openclaw;
    this.root = fs.mkdtempSync(path.join(os.tmpdir(), `lossless-e2e-${name}-`));
    this.home = path.join(this.root, "home");
    this.stateDir = path.join(this.home, ".openclaw");
    this.configPath = path.join(this.stateDir, "openclaw.json");
    this.workspace = path.join(this.stateDir, "workspace");
    this.storeDir = path.join(this.root, "store");
    this.recDir = path.join(this.root, "rec");
    this.logDir = path.join(this.root, "logs");
    for (const d of [this.home, this.stateDir, this.workspace, this.recDir, this.logDir]) fs.mkdirSync(d, { recursive: true });
    this.apiKey = `sk-e2e-SECRET-${randomBytes(12).toString("hex")}`;
    this.gatewayToken = `gw-e2e-SECRET-${randomBytes(12).toString("hex")}`;
    this.realBin = realBin === undefined ? losslessBin() : realBin;
    // bridge.command: a script that runs the recorder around the real binary.
    this.bridgeCommand = path.join(this.root, "lossless-recorded");
    fs.writeFileSync(
      this.bridgeCommand,
      [
        "#!/bin/sh",
        "# Generated by e2e/openclaw/harness.mjs: records the plugin <-> engine traffic.",
        `export LOSSLESS_E2E_RECORD_DIR=${shq(this.recDir)}`,
        `export LOSSLESS_E2E_REAL_BIN=${shq(this.realBin)}`,
        `exec ${shq(process.execPath)} ${shq(path.join(E2E_DIR, "record-child.mjs"))} "$@"`,
        "",
      ].join("\n"),
      { mode: 0o755 },
    );
    this.turns = [];
    this.commands = [];
    this.gateway = null;
    this.gatewayLog = path.join(this.logDir, "gateway.log");
  }

  /** The environment every openclaw command runs with. */
  env(extra = {}) {
    const env = {};
    for (const [k, v] of Object.entries(process.env)) {
      // Nothing of the caller's OpenClaw, engine or XDG setup leaks in.
      if (/^(OPENCLAW_|LOSSLESS_|XDG_)/.test(k)) continue;
      env[k] = v;
    }
    Object.assign(env, {
      HOME: this.home,
      OPENCLAW_STATE_DIR: this.stateDir,
      OPENCLAW_CONFIG_PATH: this.configPath,
      XDG_CONFIG_HOME: path.join(this.home, ".config"),
      XDG_DATA_HOME: path.join(this.home, ".local", "share"),
      XDG_CACHE_HOME: path.join(this.home, ".cache"),
      OPENCLAW_SKIP_CHANNELS: "1",
      OPENCLAW_DISABLE_BONJOUR: "1",
      NO_COLOR: "1",
      FORCE_COLOR: "0",
      // OpenClaw runs under this Node.
      PATH: [path.dirname(process.execPath), process.env.PATH ?? ""].join(path.delimiter),
      ...extra,
    });
    return env;
  }

  /** Every secret of the config: none may reach the engine process. */
  get secrets() {
    return [this.apiKey, this.gatewayToken];
  }

  readConfig() {
    return fs.existsSync(this.configPath) ? JSON.parse(fs.readFileSync(this.configPath, "utf8")) : {};
  }

  writeConfig(cfg) {
    fs.writeFileSync(this.configPath, JSON.stringify(cfg, null, 2) + "\n");
  }

  /** Applies fn(config) (which may mutate or return a new one) to openclaw.json. */
  patchConfig(fn) {
    const cfg = this.readConfig();
    const out = fn(cfg) ?? cfg;
    this.writeConfig(out);
    return out;
  }

  /**
   * The base config: the fake provider as the default model, the memory
   * plugin off (its own recall would blur the engine's), a local gateway on
   * `gatewayPort`, and `tools` as the `tools` section: by default
   * LEAN_TOOLS (a small profile that keeps `read` and the engine's tools, with
   * OpenClaw's default tool search: no `toolSearch` override); `null` leaves
   * the section out (OpenClaw's defaults: unset profile, tool search on);
   * `{...LEAN_TOOLS, toolSearch: false}` sends every schema directly.
   * defaultTools: true is `tools: null` (no `tools` section at all, as a new
   * user has it).
   */
  baseConfig({ fake, contextWindow = 128_000, maxTokens = 1024, gatewayPort = 0, tools = LEAN_TOOLS, defaultTools = false }) {
    if (defaultTools) tools = null;
    const cfg = {
      agents: {
        defaults: {
          model: { primary: `${PROVIDER_ID}/${MODEL_ID}` },
          workspace: this.workspace,
          skipBootstrap: true,
        },
      },
      models: {
        mode: "merge",
        providers: {
          [PROVIDER_ID]: {
            baseUrl: fake.baseUrl,
            apiKey: this.apiKey,
            api: "openai-completions",
            models: [
              {
                id: MODEL_ID,
                name: "Fake e2e model",
                reasoning: false,
                input: ["text"],
                cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
                contextWindow,
                maxTokens,
              },
            ],
          },
        },
      },
      ...(tools ? { tools: structuredClone(tools) } : {}),
      plugins: { slots: { memory: "none" } },
      gateway: {
        mode: "local",
        port: gatewayPort || 18789,
        bind: "loopback",
        auth: { mode: "token", token: this.gatewayToken },
      },
      logging: { file: path.join(this.logDir, "openclaw.log") },
    };
    return cfg;
  }

  /** plugins.entries.lossless.config: the engine's config plus the recording bridge. */
  engineConfig(extra = {}) {
    return { storeDir: this.storeDir, ...extra, bridge: { command: this.bridgeCommand, ...(extra.bridge ?? {}) } };
  }

  /** Sets plugins.slots.contextEngine and plugins.entries.lossless.config. */
  selectEngine(slot, engineConfig) {
    return this.patchConfig((c) => {
      c.plugins ??= {};
      c.plugins.slots ??= {};
      c.plugins.slots.contextEngine = slot;
      c.plugins.entries ??= {};
      c.plugins.entries.lossless ??= {};
      c.plugins.entries.lossless.enabled = true;
      if (engineConfig) c.plugins.entries.lossless.config = engineConfig;
    });
  }

  /** Runs `openclaw <args>`; never throws for a non-zero exit. */
  run(args, { timeoutMs = 300_000, env = {}, label } = {}) {
    const started = Date.now();
    return new Promise((resolve) => {
      const child = spawn(this.openclaw.cmd, [...this.openclaw.args, ...args], {
        cwd: this.root,
        env: this.env(env),
        stdio: ["ignore", "pipe", "pipe"],
        detached: true,
      });
      let stdout = "";
      let stderr = "";
      child.stdout.setEncoding("utf8").on("data", (d) => (stdout += d));
      child.stderr.setEncoding("utf8").on("data", (d) => (stderr += d));
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        try {
          process.kill(-child.pid, "SIGKILL");
        } catch {}
      }, timeoutMs);
      child.on("close", (code, signal) => {
        clearTimeout(timer);
        const rec = { args, label, code, signal, timedOut, ms: Date.now() - started, stdout, stderr: stripAnsi(stderr) };
        this.commands.push(rec);
        fs.appendFileSync(
          path.join(this.logDir, "commands.log"),
          `\n$ openclaw ${args.map((a) => (a.length > 120 ? a.slice(0, 120) + "…" : a)).join(" ")}\n` +
            `# exit ${code}${signal ? ` (${signal})` : ""}${timedOut ? " TIMED OUT" : ""} in ${rec.ms} ms\n${stripAnsi(stderr)}`,
        );
        resolve(rec);
      });
    });
  }

  /**
   * `openclaw plugins install -l <repo>/openclaw-plugin --force --accept-capabilities`;
   * `dir` installs another copy of the plugin the same way.
   */
  install({ dir = PLUGIN_DIR } = {}) {
    const args = dir === PLUGIN_DIR ? INSTALL_ARGS : INSTALL_ARGS.map((a) => (a === PLUGIN_DIR ? dir : a));
    return this.run(args, { label: "install" });
  }

  /**
   * One `openclaw agent` turn. local: embedded (--local); else through the
   * running gateway. Returns the turn record (also kept in this.turns):
   * {sessionKey, message, local, code, ms, json, text, stderr}.
   */
  async turn({ sessionKey, message, local = false, timeoutSec = 240 }) {
    const args = ["agent"];
    if (local) args.push("--local");
    args.push("--agent", AGENT_ID, "--session-key", sessionKey, "--message", message, "--json", "--timeout", String(timeoutSec));
    const started = Date.now();
    const r = await this.run(args, { timeoutMs: (timeoutSec + 60) * 1000, label: `turn ${sessionKey}` });
    let json = null;
    try {
      json = JSON.parse(r.stdout);
    } catch {}
    const result = json?.result ?? json; // gateway: {runId, status, result}; local: the result itself
    const text = (result?.payloads ?? []).map((p) => p.text ?? "").join("\n");
    const rec = {
      sessionKey,
      message,
      local,
      code: r.code,
      ms: r.ms,
      startedAt: started,
      endedAt: Date.now(),
      json,
      text,
      sessionId: result?.meta?.agentMeta?.sessionId ?? null,
      stderr: r.stderr,
    };
    this.turns.push(rec);
    return rec;
  }

  /** Starts `openclaw gateway run` and waits until it is ready. */
  async startGateway({ timeoutMs = 240_000 } = {}) {
    if (this.gateway) throw new Error("gateway already running");
    const port = this.readConfig().gateway?.port;
    const from = fs.existsSync(this.gatewayLog) ? fs.statSync(this.gatewayLog).size : 0;
    const out = fs.openSync(this.gatewayLog, "a");
    const child = spawn(this.openclaw.cmd, [...this.openclaw.args, "gateway", "run", "--port", String(port)], {
      cwd: this.root,
      env: this.env(),
      stdio: ["ignore", out, out],
      detached: true,
    });
    fs.closeSync(out);
    const gw = { child, port, exited: null, startedAt: Date.now() };
    child.on("exit", (code, signal) => (gw.exited = { code, signal }));
    this.gateway = gw;
    await waitFor(
      () => {
        if (gw.exited) throw new Error(`gateway exited (${JSON.stringify(gw.exited)}) before it was ready:\n${this.gatewayOutput().slice(-3000)}`);
        return /\[gateway\] ready\b/.test(stripAnsi(fs.readFileSync(this.gatewayLog).subarray(from).toString("utf8")));
      },
      { timeoutMs, intervalMs: 250, what: "the gateway to be ready" },
    );
    gw.readyMs = Date.now() - gw.startedAt;
    return gw;
  }

  /** Everything the gateway(s) of this env printed (stdout and stderr, all runs). */
  gatewayOutput() {
    return stripAnsi(readIf(this.gatewayLog));
  }

  /** Stops and starts the gateway (a fresh process: no quarantine carried over). */
  async restartGateway() {
    await this.stopGateway();
    return this.startGateway();
  }

  /**
   * Stops the gateway (SIGTERM, then SIGKILL of its process group after
   * `timeoutMs`) and waits for the engine processes it ran to exit, so the
   * store can be opened by `lossless`.
   */
  async stopGateway({ timeoutMs = 60_000 } = {}) {
    const gw = this.gateway;
    if (!gw) return;
    if (!gw.exited) {
      try {
        process.kill(gw.child.pid, "SIGTERM");
      } catch {}
      try {
        await waitFor(() => gw.exited, { timeoutMs, what: "the gateway to exit" });
      } catch {
        try {
          process.kill(-gw.child.pid, "SIGKILL");
        } catch {}
        await waitFor(() => gw.exited, { timeoutMs: 10_000, what: "the gateway to die" });
      }
    }
    await this.waitChildrenExited();
    // Helpers the gateway left in its process group.
    try {
      process.kill(-gw.child.pid, "SIGKILL");
    } catch {}
    this.gateway = null;
  }

  /**
   * Whether pid is a live engine process (or recorder) of this env: checked
   * by its command line, so a recycled pid is never taken for one.
   */
  isEngineProcess(pid) {
    if (!pid) return false;
    try {
      const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8");
      const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
      if (/\) Z /.test(stat)) return false; // a zombie has exited
      if (!cmd.includes(this.realBin) && !cmd.includes("record-child.mjs")) return false;
      return fs.readFileSync(`/proc/${pid}/environ`, "utf8").includes(`LOSSLESS_E2E_RECORD_DIR=${this.recDir}`);
    } catch {
      return false;
    }
  }

  /** Waits until every recorded engine process has exited (kills stragglers after timeoutMs). */
  async waitChildrenExited({ timeoutMs = 20_000 } = {}) {
    const alive = (pid) => this.isEngineProcess(pid);
    const running = () => this.starts().filter((s) => alive(s.childPid) || alive(s.wrapperPid));
    try {
      await waitFor(() => running().length === 0, { timeoutMs, what: "engine processes to exit" });
    } catch {
      for (const s of running()) {
        for (const pid of [s.childPid, s.wrapperPid]) {
          try {
            process.kill(pid, "SIGKILL");
          } catch {}
        }
      }
      await sleep(500);
    }
  }

  // ---- the engine process ----------------------------------------------

  /** Engine process starts recorded so far: [{wrapperPid, childPid, dir, argv, time}]. */
  starts() {
    return parseJsonl(readIf(path.join(this.recDir, "starts.jsonl")));
  }

  /**
   * Every engine process with its traffic: [{...start, stdinRaw, stdin,
   * stdout, stderr, calls}], where calls are the plugin's requests matched
   * with the engine's answers: [{id, method, params, result, error, child}],
   * and hostCalls the engine's callbacks to the plugin.
   */
  children() {
    return this.starts().map((s) => {
      const stdinRaw = readIf(path.join(s.dir, "stdin.jsonl"));
      const stdin = parseJsonl(stdinRaw);
      const stdout = parseJsonl(readIf(path.join(s.dir, "stdout.jsonl")));
      const answers = new Map();
      for (const m of stdout) if (m && m.method === undefined && m.id !== undefined) answers.set(m.id, m);
      const calls = stdin
        .filter((m) => m && typeof m.method === "string" && m.id !== undefined)
        .map((m) => ({ id: m.id, method: m.method, params: m.params, result: answers.get(m.id)?.result, error: answers.get(m.id)?.error, answered: answers.has(m.id), child: s.wrapperPid }));
      const hostAnswers = new Map();
      for (const m of stdin) if (m && m.method === undefined && m.id !== undefined) hostAnswers.set(m.id, m);
      const hostCalls = stdout
        .filter((m) => m && typeof m.method === "string" && m.id !== undefined)
        .map((m) => ({ id: m.id, method: m.method, params: m.params, result: hostAnswers.get(m.id)?.result, error: hostAnswers.get(m.id)?.error }));
      return { ...s, stdinRaw, stdin, stdout, stderr: readIf(path.join(s.dir, "stderr.log")), calls, hostCalls };
    });
  }

  /**
   * The engine process serving now: the newest recorded start whose process
   * is alive and whose initialize succeeded (a second process that could not
   * open the store does not count).
   */
  liveEngine() {
    const alive = (pid) => this.isEngineProcess(pid);
    return this.children()
      .filter((c) => alive(c.childPid) && c.calls.some((k) => k.method === "initialize" && k.result && !k.error))
      .at(-1);
  }

  /** Every plugin -> engine call, across processes, in order. */
  calls(method) {
    const all = this.children().flatMap((c) => c.calls);
    return method ? all.filter((c) => c.method === method) : all;
  }

  // ---- the engine store -------------------------------------------------

  /** Runs the lossless command on this env's store (the store must not be open elsewhere). */
  lossless(args) {
    const r = spawnSync(this.realBin, [...args, "--store", this.storeDir], { encoding: "utf8", maxBuffer: 256 << 20, env: { ...process.env, LOSSLESS_STORE: this.storeDir } });
    return { code: r.status, stdout: r.stdout ?? "", stderr: r.stderr ?? "" };
  }

  /** `lossless sessions --all --json`. */
  storeSessions() {
    const r = this.lossless(["sessions", "--all", "--json"]);
    if (r.code !== 0) throw new Error(`lossless sessions failed (${r.code}): ${r.stderr}`);
    return JSON.parse(r.stdout || "[]") ?? [];
  }

  /** `lossless export --session ID`: {lines (raw), messages (parsed)}. */
  exportSession(sessionId) {
    const r = this.lossless(["export", "--session", sessionId]);
    if (r.code !== 0) throw new Error(`lossless export --session ${sessionId} failed (${r.code}): ${r.stderr}`);
    const lines = r.stdout.split("\n").filter((l) => l.length > 0);
    return { lines, messages: lines.map((l) => JSON.parse(l)) };
  }

  // ---- OpenClaw's transcripts (SQLite) --------------------------------

  get agentDbPath() {
    return path.join(this.stateDir, "agents", AGENT_ID, "agent", "openclaw-agent.sqlite");
  }

  /**
   * OpenClaw's transcript of a session key, from its SQLite store
   * (agents/<agent>/agent/openclaw-agent.sqlite): session_nodes maps the key
   * to current_session_id; transcript_events(session_id, seq, event_json |
   * event_zstd) holds every event; session_transcript_active_events
   * (active_position -> event_seq) is the visible branch. Returns {sessionId,
   * active: [event], all: [event], messages: [message of the active branch]}.
   */
  async transcript(sessionKey) {
    const { DatabaseSync } = await import("node:sqlite");
    const zlib = await import("node:zlib");
    const db = new DatabaseSync(this.agentDbPath, { readOnly: true });
    try {
      const node = db.prepare("SELECT current_session_id AS id FROM session_nodes WHERE session_key = ?").get(sessionKey);
      if (!node) return { sessionId: null, active: [], all: [], messages: [] };
      const sessionId = node.id;
      const decode = (r) => {
        const text = r.event_json ?? zlib.zstdDecompressSync(Buffer.from(r.event_zstd)).toString("utf8");
        return { seq: r.seq, ...JSON.parse(text) };
      };
      const all = db.prepare("SELECT seq, event_json, event_zstd FROM transcript_events WHERE session_id = ? ORDER BY seq").all(sessionId).map(decode);
      const bySeq = new Map(all.map((e) => [e.seq, e]));
      const active = db
        .prepare("SELECT event_seq FROM session_transcript_active_events WHERE session_id = ? ORDER BY active_position")
        .all(sessionId)
        .map((r) => bySeq.get(r.event_seq))
        .filter(Boolean);
      const messages = active.filter((e) => e.type === "message" && e.message).map((e) => e.message);
      return { sessionId, active, all, messages };
    } finally {
      db.close();
    }
  }

  /** Every session key OpenClaw knows, with its current session id. */
  async sessionKeys() {
    const { DatabaseSync } = await import("node:sqlite");
    const db = new DatabaseSync(this.agentDbPath, { readOnly: true });
    try {
      return db.prepare("SELECT session_key AS key, current_session_id AS sessionId FROM session_nodes ORDER BY session_key").all().map((r) => ({ ...r }));
    } finally {
      db.close();
    }
  }

  async cleanup() {
    if (this.gateway) await this.stopGateway().catch(() => {});
    if (process.env.LOSSLESS_E2E_KEEP === "1") {
      process.stderr.write(`lossless e2e: kept ${this.root}\n`);
      return;
    }
    fs.rmSync(this.root, { recursive: true, force: true });
  }
}

function shq(s) {
  return `'${String(s).replace(/'/g, `'\\''`)}'`;
}

// ---- reading model requests ---------------------------------------------

/** Chat completion requests from the fake server's log. */
export function chatRequests(fake) {
  return fake.requests().filter((r) => r.path.endsWith("/chat/completions"));
}

/** The messages of a request whose text contains `needle`. */
export function messagesContaining(req, needle) {
  return (req.body?.messages ?? []).filter((m) => contentText(m.content).includes(needle));
}

export const RECALL_OPEN = "<lcm_recall>";
export const SUMMARY_OPEN = "<lcm_summary";

/** The recall messages of a request (user messages holding an <lcm_recall> block). */
export function recallMessages(req) {
  return (req.body?.messages ?? []).filter((m) => m.role === "user" && contentText(m.content).includes(RECALL_OPEN));
}

/** Items of a recall block: [{attrs, body}]. */
export function recallItems(text) {
  const items = [];
  const re = /<item([^>]*)>\n([\s\S]*?)\n<\/item>/g;
  let m;
  while ((m = re.exec(text))) items.push({ attrs: m[1], body: m[2] });
  return items;
}

/** Summary ids in a request (from <lcm_summary id="..."> blocks). */
export function summaryIds(req) {
  const ids = [];
  for (const m of req.body?.messages ?? []) {
    const re = /<lcm_summary id="([^"]+)"/g;
    let x;
    const t = contentText(m.content);
    while ((x = re.exec(t))) ids.push(x[1]);
  }
  return ids;
}

/** The request(s) whose last user message contains `needle` (the requests of that turn). */
export function requestsForPrompt(fake, needle) {
  return chatRequests(fake).filter((r) => {
    const msgs = r.body?.messages ?? [];
    return msgs.some((m) => m.role === "user" && contentText(m.content).includes(needle) && !contentText(m.content).includes(RECALL_OPEN));
  });
}

/** Lines of OpenClaw output that say the context engine degraded or was quarantined. */
export function degradationLines(text) {
  return stripAnsi(text)
    .split("\n")
    .filter((l) => /\[context-engine\]/.test(l) && /(degraded to|quarantin|falling back to default engine|fallback failed|does not support durable turn)/i.test(l));
}
