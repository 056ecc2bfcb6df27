// A transparent stand-in for `lossless serve --stdio` that records what
// passes through it. The plugin runs it as `bridge.command` (through a small
// generated shell script, see harness.mjs); it starts the real binary
// ($LOSSLESS_E2E_REAL_BIN) with the same arguments and copies
//
//   stdin  (what the plugin wrote)  -> <dir>/stdin.jsonl   and the child
//   stdout (what the engine answered) -> <dir>/stdout.jsonl and the plugin
//   stderr                           -> <dir>/stderr.log    and the plugin
//
// byte for byte, where <dir> is $LOSSLESS_E2E_RECORD_DIR/child-<wrapper pid>
// (one directory per start, so what each engine process saw stays apart).
// Every start appends one JSON line to $LOSSLESS_E2E_RECORD_DIR/starts.jsonl
// ({wrapperPid, childPid, parentPid, dir, argv, time}; parentPid is the
// OpenClaw process that ran it), every exit one to exits.jsonl,
// and the running child's pid is kept in $LOSSLESS_E2E_RECORD_DIR/child.pid,
// so a test can tell when (and whether) an engine process was started and can
// kill -9 the real engine process. The wrapper exits with the child's status
// (a signal death is re-raised on itself).

import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

const root = process.env.LOSSLESS_E2E_RECORD_DIR;
const real = process.env.LOSSLESS_E2E_REAL_BIN;
if (!root || !real) {
  process.stderr.write("record-child: LOSSLESS_E2E_RECORD_DIR and LOSSLESS_E2E_REAL_BIN must be set\n");
  process.exit(2);
}
const dir = path.join(root, `child-${process.pid}`);
fs.mkdirSync(dir, { recursive: true });
const args = process.argv.slice(2);
const child = spawn(real, args, { stdio: ["pipe", "pipe", "pipe"] });
fs.writeFileSync(path.join(root, "child.pid"), String(child.pid ?? ""));
fs.appendFileSync(
  path.join(root, "starts.jsonl"),
  JSON.stringify({ wrapperPid: process.pid, childPid: child.pid ?? null, parentPid: process.ppid, dir, argv: args, time: Date.now() }) + "\n",
);

const stdinLog = fs.createWriteStream(path.join(dir, "stdin.jsonl"), { flags: "a" });
const stdoutLog = fs.createWriteStream(path.join(dir, "stdout.jsonl"), { flags: "a" });
const stderrLog = fs.createWriteStream(path.join(dir, "stderr.log"), { flags: "a" });

child.stdin.on("error", () => {});
process.stdin.on("data", (chunk) => {
  stdinLog.write(chunk);
  child.stdin.write(chunk);
});
process.stdin.on("end", () => child.stdin.end());
child.stdout.on("data", (chunk) => {
  stdoutLog.write(chunk);
  process.stdout.write(chunk);
});
child.stderr.on("data", (chunk) => {
  stderrLog.write(chunk);
  process.stderr.write(chunk);
});

let exiting = false;
const forward = (sig) => () => {
  if (!exiting) child.kill(sig);
};
for (const sig of ["SIGTERM", "SIGINT", "SIGHUP"]) process.on(sig, forward(sig));

child.on("error", (err) => {
  stderrLog.write(`record-child: cannot start ${real}: ${err.message}\n`);
  process.stderr.write(`record-child: cannot start ${real}: ${err.message}\n`);
  process.exitCode = 127;
});
child.on("close", (code, signal) => {
  exiting = true;
  fs.appendFileSync(
    path.join(root, "exits.jsonl"),
    JSON.stringify({ wrapperPid: process.pid, childPid: child.pid ?? null, code, signal, time: Date.now() }) + "\n",
  );
  let pending = 3;
  const done = () => {
    if (--pending > 0) return;
    if (signal) {
      process.removeAllListeners(signal);
      process.kill(process.pid, signal);
      return;
    }
    process.exit(code ?? 1);
  };
  stdinLog.end(done);
  stdoutLog.end(done);
  stderrLog.end(done);
});
