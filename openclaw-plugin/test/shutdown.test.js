// The engine process at the host's shutdown: OpenClaw's gateway is stopped
// by a SIGTERM to its process group, which reaches the engine process too;
// the plugin must not take its exit for a crash and start another engine
// while the host shuts down. A genuine crash still restarts it, and a later
// call after a stop still gets a process. Each case runs a stand-in host in
// a Node process of its own, in a process group of its own; every engine
// process it starts is counted by the command the plugin runs (a shell that
// appends its pid to a file, then execs the engine).
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const fakeServer = fileURLToPath(new URL("../fixtures/fake-server.mjs", import.meta.url));
const BIN = process.env.LOSSLESS_BIN;
const posix = process.platform === "win32" ? "process groups and /bin/sh" : false;

// The engines: the real binary (when LOSSLESS_BIN is set), which handles
// SIGTERM and exits 0, and the fake server, which dies of the signal.
const engines = [
  { name: "real binary", skip: posix || (BIN ? false : "LOSSLESS_BIN is not set"), exec: () => [BIN, "serve", "--stdio"] },
  { name: "fake server", skip: posix, exec: () => [process.execPath, fakeServer] },
];

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function until(cond, ms, what) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what()}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/**
 * Starts a stand-in host running `body` (an async function body with
 * `engine` and `say(obj)` in scope) in its own process group. It returns
 * the host, the lines it said (parsed) and the engine pids spawned so far.
 */
function host(t, exec, body, { onSigterm = "" } = {}) {
  const dir = mkdtempSync(join(tmpdir(), "lossless-shutdown-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const spawns = join(dir, "spawns");
  const [cmd, ...args] = exec();
  const quoted = [cmd, ...args].map((a) => `'${a.replaceAll("'", `'\\''`)}'`).join(" ");
  const pluginConfig = {
    storeDir: join(dir, "store"),
    bridge: { command: "/bin/sh", args: ["-c", `echo $$ >> '${spawns}'; exec ${quoted}`] },
  };
  const script = `
    import { createLosslessEngine } from "./lib/engine.js";
    import { existsSync, readFileSync } from "node:fs";
    // The engine processes spawned so far, as the shell wrapper wrote them.
    const spawned = () => (existsSync(${JSON.stringify(spawns)}) ? readFileSync(${JSON.stringify(spawns)}, "utf8").trim().split("\\n").map(Number) : []);
    const say = (o) => console.log(JSON.stringify({ ...o, spawned: spawned() }));
    const logs = [];
    const logger = Object.fromEntries(["debug", "info", "warn", "error"].map((l) => [l, (m) => logs.push(l + ": " + m)]));
    const engine = createLosslessEngine({ pluginConfig: ${JSON.stringify(pluginConfig)}, logger });
    // A gateway's graceful shutdown: it goes on for a while after SIGTERM.
    process.on("SIGTERM", async () => {
      ${onSigterm}
      await new Promise((r) => setTimeout(r, 1500));
      say({ end: true, pid: engine.lossless.pid ?? null, restarts: engine.lossless.restarts, logs });
      process.exit(0);
    });
    setInterval(() => {}, 1000); // a gateway keeps running
    ${body}
  `;
  const child = spawn(process.execPath, ["--input-type=module", "-e", script], { cwd: root, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  t.after(() => {
    try {
      process.kill(-child.pid, "SIGKILL");
    } catch {
      // the group is gone
    }
  });
  const said = [];
  let buf = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (d) => {
    buf += d;
    for (let i; (i = buf.indexOf("\n")) >= 0; buf = buf.slice(i + 1)) said.push(JSON.parse(buf.slice(0, i)));
  });
  child.stderr.setEncoding("utf8").on("data", (d) => (stderr += d));
  const exited = new Promise((r) => child.on("exit", (code) => r(code)));
  const wait = (pred, what, ms = 30_000) => until(() => said.some(pred), ms, () => `${what}; host stderr: ${stderr}`).then(() => said.find(pred));
  return { child, said, wait, exited };
}

const INGEST = `await engine.ingest({ sessionId: "s", sessionKey: "agent:main:main", message: { role: "user", content: "hello", timestamp: 1 } });`;

for (const e of engines) {
  test(`a SIGTERM to the host's process group starts no new engine process (${e.name})`, { skip: e.skip }, async (t) => {
    const h = host(t, e.exec, `${INGEST} say({ ready: engine.lossless.pid });`);
    const { ready: pid, spawned } = await h.wait((m) => m.ready, "the first call");
    assert.deepEqual(spawned, [pid]);
    process.kill(-h.child.pid, "SIGTERM"); // what stopping the gateway does
    const end = await h.wait((m) => m.end, "the host's shutdown");
    assert.equal(await h.exited, 0);
    assert.deepEqual(end.spawned, [pid], "no engine process started after the SIGTERM");
    assert.equal(end.pid, null, "no engine process running");
    assert.equal(end.restarts, 0);
    assert.ok(!alive(pid), "the engine process ended");
    assert.ok(end.logs.some((l) => /^info: .*stopped .*not restarted now/.test(l)), `logs: ${end.logs}`);
    assert.ok(!end.logs.some((l) => /^error:/.test(l)), `a stop logged as an error: ${end.logs}`);
  });

  test(`a crash still restarts the engine process at once, a stop on the next call (${e.name})`, { skip: e.skip }, async (t) => {
    const h = host(
      t,
      e.exec,
      `${INGEST}
      const first = engine.lossless.pid;
      process.kill(first, "SIGKILL"); // a crash while idle
      while (engine.lossless.pid === undefined || engine.lossless.pid === first || !engine.lossless.client.initResult) await new Promise((r) => setTimeout(r, 20));
      say({ crashed: first, restarted: engine.lossless.pid, restarts: engine.lossless.restarts });
      ${INGEST}
      // Stopped on purpose (an operator's kill): not restarted at once...
      const second = engine.lossless.pid;
      process.kill(second, "SIGTERM");
      while (engine.lossless.client.child) await new Promise((r) => setTimeout(r, 20));
      await new Promise((r) => setTimeout(r, 500));
      say({ stopped: second, pid: engine.lossless.pid ?? null });
      // ... but the next call gets a process.
      ${INGEST}
      say({ again: engine.lossless.pid, restarts: engine.lossless.restarts });`,
    );
    const crash = await h.wait((m) => m.crashed, "the restart after a crash");
    assert.notEqual(crash.restarted, crash.crashed);
    assert.equal(crash.restarts, 1);
    const stop = await h.wait((m) => m.stopped, "the stop");
    assert.equal(stop.stopped, crash.restarted);
    assert.equal(stop.pid, null, "a stopped engine is not restarted at once");
    assert.deepEqual(stop.spawned, [crash.crashed, crash.restarted]);
    const again = await h.wait((m) => m.again, "the call after the stop");
    assert.ok(again.again > 0 && again.again !== stop.stopped);
    assert.deepEqual(again.spawned, [crash.crashed, crash.restarted, again.again]);
  });
}
