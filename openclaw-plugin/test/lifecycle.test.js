// The engine process's lifecycle as OpenClaw needs it: register() and the
// factories start nothing (they also run for `openclaw plugins list`); the
// process, once started, keeps no hold on Node's event loop while idle, so
// a one-shot `openclaw agent --local` exits when done; and it ends with the
// Node process. Each case runs in a separate Node process.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const fakeServer = fileURLToPath(new URL("../fixtures/fake-server.mjs", import.meta.url));
const BIN = process.env.LOSSLESS_BIN;
const linux = process.platform === "linux" ? false : "reads /proc";

function run(script, env = {}) {
  return new Promise((resolve, reject) => {
    const child = execFile(process.execPath, ["--input-type=module", "-e", script], { cwd: root, env: { ...process.env, ...env }, timeout: 20_000 }, (err, stdout, stderr) => {
      if (err) reject(Object.assign(err, { stdout, stderr }));
      else resolve({ stdout, stderr });
    });
    child.stdin?.end();
  });
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function gone(pid, ms = 5000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (!alive(pid)) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return !alive(pid);
}

test("register(), the engine factory and the tool factories spawn no process", { skip: linux }, async () => {
  const script = `
    import plugin from "./index.js";
    import { readdirSync, readFileSync } from "node:fs";
    const children = () => readdirSync("/proc").filter((d) => /^\\d+$/.test(d)).filter((d) => {
      try { const s = readFileSync("/proc/" + d + "/stat", "utf8"); return Number(s.slice(s.lastIndexOf(")") + 2).split(" ")[1]) === process.pid; } catch { return false; }
    });
    const engines = [], tools = [];
    const api = {
      id: "lossless", registrationMode: "discovery",
      pluginConfig: { bridge: { command: ${JSON.stringify(process.execPath)}, args: [${JSON.stringify(fakeServer)}] } },
      logger: console,
      registerContextEngine: (id, f) => engines.push(f),
      registerTool: (t, o) => tools.push(t),
    };
    plugin.register(api);
    const engine = await engines[0]({ agentDir: "/a", workspaceDir: "/w" });
    for (const t of tools) t({ agentId: "main", sessionKey: "agent:main:main", sessionId: "s" });
    await engine.dispose();
    await new Promise((r) => setTimeout(r, 300));
    console.log(JSON.stringify({ info: engine.info.id, tools: tools.length, children: children() }));
  `;
  const { stdout } = await run(script);
  assert.deepEqual(JSON.parse(stdout), { info: "lossless", tools: 3, children: [] });
});

async function exitsWhenIdle(command, args, extraConfig = {}) {
  const script = `
    import { createLosslessEngine } from "./lib/engine.js";
    const engine = createLosslessEngine({ pluginConfig: { ...${JSON.stringify(extraConfig)}, bridge: { command: ${JSON.stringify(command)}, args: ${JSON.stringify(args)} } } });
    await engine.ingest({ sessionId: "s", sessionKey: "agent:main:main", message: { role: "user", content: "hello", timestamp: 1 } });
    // A logical turn ends: dispose leaves the shared process running.
    await engine.dispose();
    console.log(engine.lossless.pid);
    // Nothing else is pending: Node must be able to exit now.
  `;
  const started = Date.now();
  const { stdout } = await run(script);
  const pid = Number(stdout.trim());
  assert.ok(pid > 0, `pid ${stdout}`);
  assert.ok(Date.now() - started < 15_000);
  assert.ok(await gone(pid), `the engine process ${pid} outlived its parent`);
}

test("an idle engine process does not keep Node alive, and ends with it (fake server)", async () => {
  await exitsWhenIdle(process.execPath, [fakeServer], { storeDir: "/nowhere/idle" });
});

test("an idle engine process does not keep Node alive, and ends with it (real binary)", { skip: BIN ? false : "LOSSLESS_BIN is not set" }, async (t) => {
  const { mkdtempSync, rmSync } = await import("node:fs");
  const { tmpdir } = await import("node:os");
  const { join } = await import("node:path");
  const dir = mkdtempSync(join(tmpdir(), "lossless-idle-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  await exitsWhenIdle(BIN, ["serve", "--stdio"], { storeDir: join(dir, "store") });
});

test("a request in flight keeps Node alive until it is answered", async () => {
  const script = `
    import { createLosslessEngine } from "./lib/engine.js";
    const engine = createLosslessEngine({ pluginConfig: { storeDir: "/nowhere/busy", bridge: { command: ${JSON.stringify(process.execPath)}, args: [${JSON.stringify(fakeServer)}] } } });
    // The fake server answers this llm callback after the host's 300 ms.
    engine.assemble({ sessionId: "s", prompt: "llm", messages: [], runtimeContext: { llm: { complete: () => new Promise((r) => setTimeout(() => r({ text: "late" }), 300).unref()) } } })
      .then((res) => console.log(res.systemPromptAddition));
  `;
  const { stdout } = await run(script);
  assert.equal(stdout.trim(), "late");
});
