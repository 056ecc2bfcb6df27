// The Memory tab in OpenClaw's Control UI, in a real browser against a real
// gateway (#39): headless Chromium (Debian's, driven over the DevTools
// protocol by puppeteer-core, which .ci/openclaw-setup.sh installs into the
// CI cache; no browser is ever downloaded) logs into the Control UI of an
// `openclaw gateway run` (gateway token auth, loopback), opens the plugin's
// Memory tab, and finds in its sandboxed frame: the session with a summary
// and the summary's expansion down to a raw message, the context's
// explanation (parts, what was cut, recall), a search hit; a stored
// message holding </textarea><script> shown as text. A click on "open in
// chat" makes the dashboard open the session. A second test asks the
// route without authentication and gets nothing. A screenshot of the tab
// is kept ($LOSSLESS_CI_ARTIFACTS, else e2e/openclaw/artifacts) and its
// path printed.

import { describe, before, after, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import { OpenClawEnv, skipReason, freePort, E2E_DIR, REQUIRED } from "./harness.mjs";
import { startFakeModel } from "./fake-model.mjs";
import { filler } from "./text.mjs";

const ROUTE = "/plugins/lossless/memory";
const KEY = "agent:main:e2e-memtab";
const MARKER = "MEMTAB-MARKER-7Q";
const HOSTILE = `Keep this literally: </textarea><script>window.__pwned=1</script><b>bold</b> ${MARKER}-HTML`;

/** Debian's chromium (or $LOSSLESS_TEST_BROWSER), or null. */
function browserPath() {
  for (const p of [process.env.LOSSLESS_TEST_BROWSER, "/usr/bin/chromium", "/usr/bin/chromium-browser"]) {
    if (p && fs.existsSync(p)) return p;
  }
  return null;
}

/** puppeteer-core from $LOSSLESS_PUPPETEER_DIR (an npm prefix), or null. */
async function loadPuppeteer() {
  const dir = process.env.LOSSLESS_PUPPETEER_DIR;
  if (!dir) return null;
  try {
    const entry = createRequire(path.join(dir, "noop.js")).resolve("puppeteer-core");
    const m = await import(pathToFileURL(entry).href);
    return m.default ?? m;
  } catch {
    return null;
  }
}

const puppeteer = await loadPuppeteer();
const chromium = browserPath();
let skip = skipReason();
if (!skip && (!puppeteer || !chromium)) {
  const why = !puppeteer ? "puppeteer-core not found: set LOSSLESS_PUPPETEER_DIR (eval \"$(.ci/openclaw-setup.sh)\" sets it)" : "no Chromium: install Debian's chromium or set LOSSLESS_TEST_BROWSER";
  if (REQUIRED) throw new Error(`memory tab test cannot run: ${why}`);
  skip = why;
}

function artifactsDir() {
  const dir = process.env.LOSSLESS_CI_ARTIFACTS || path.join(E2E_DIR, "artifacts");
  fs.mkdirSync(dir, { recursive: true });
  return dir;
}

describe("the Memory tab in OpenClaw's Control UI", { skip }, () => {
  let env;
  let fake;
  let browser;
  let base;
  const S = { errors: [] };

  before(
    async () => {
      env = new OpenClawEnv({ name: "memtab" });
      fake = await startFakeModel({ logFile: path.join(env.root, "model-requests.jsonl") });
      const port = await freePort();
      base = `http://127.0.0.1:${port}`;
      env.writeConfig(env.baseConfig({ fake, contextWindow: 16_000, gatewayPort: port }));
      const install = await env.install();
      if (install.code !== 0) throw new Error(`plugin install failed (${install.code}):\n${install.stdout}\n${install.stderr}`);
      // Small DAG sizes and a low threshold: the turns below compact (the
      // extractive summarizer: no model calls for summaries).
      env.selectEngine(
        "lossless",
        env.engineConfig({
          summarizer: { kind: "extractive" },
          contextThreshold: 0.05,
          freshTailMessages: 2,
          leafChunkTokens: 1500,
          leafTargetTokens: 200,
          minFanIn: 2,
        }),
      );
      await env.startGateway();
      const turns = [
        `${MARKER}-1: the deploy window is Tuesday 14:00 UTC. ${filler(4000, 1)}`,
        HOSTILE,
        `${MARKER}-3: the rollback plan uses the blue cluster. ${filler(4000, 3)}`,
        `${MARKER}-4: one more note for the record. ${filler(4000, 4)}`,
      ];
      for (const message of turns) {
        const t = await env.turn({ sessionKey: KEY, message });
        if (t.code !== 0) S.errors.push(`turn "${message.slice(0, 30)}" exited ${t.code}: ${t.stderr.slice(-1500)}`);
      }
      // A profile with Chrome's default cookie setting (third-party cookies
      // allowed outside incognito): headless Chromium blocks them, and the
      // frame's own requests need the dashboard's grant cookie, which the
      // browser sends as a third-party cookie (the frame's origin is
      // opaque). OpenClaw documents the requirement (gateway-routes.md).
      const profile = path.join(env.root, "chromium-profile");
      fs.mkdirSync(path.join(profile, "Default"), { recursive: true });
      fs.writeFileSync(path.join(profile, "Default", "Preferences"), JSON.stringify({ profile: { cookie_controls_mode: 0, block_third_party_cookies: false } }));
      browser = await puppeteer.launch({
        userDataDir: profile,
        executablePath: chromium,
        headless: true,
        args: ["--no-sandbox", "--disable-dev-shm-usage", "--no-first-run", "--no-default-browser-check"],
      });
    },
    { timeout: 10 * 60_000 },
  );

  after(async () => {
    await browser?.close().catch(() => {});
    await fake?.close();
    await env?.cleanup();
  });

  test("without the gateway's authentication the route serves nothing", async () => {
    for (const p of [`${ROUTE}/`, `${ROUTE}/app.js`, `${ROUTE}/api/sessions`, `${ROUTE}/api/overview`]) {
      const r = await fetch(base + p, { redirect: "manual" });
      const body = await r.text();
      assert.ok(r.status === 401 || r.status === 403, `${p} answered ${r.status} without authentication: ${body.slice(0, 200)}`);
      assert.ok(!body.includes(MARKER), `${p} leaked stored text without authentication`);
      assert.ok(!body.includes("lossless · memory explorer") && !body.includes("EMBEDDED"), `${p} served the page without authentication`);
    }
    // A wrong bearer token is refused too.
    const r = await fetch(`${base}${ROUTE}/api/sessions`, { headers: { Authorization: "Bearer not-the-token" } });
    assert.ok(r.status === 401 || r.status === 403, `a wrong token got ${r.status}`);
  });

  test("the tab shows the session, its summary down to a message, the context and why, a search hit; open in chat", async () => {
    assert.deepEqual(S.errors, []);
    const page = await browser.newPage();
    await page.setViewport({ width: 1400, height: 1000 });
    const consoleErrors = [];
    page.on("console", (m) => {
      if (m.type() === "error") consoleErrors.push(m.text());
    });
    // The dashboard takes the gateway token from the fragment (never sent).
    await page.goto(`${base}/#token=${encodeURIComponent(env.gatewayToken)}`, { waitUntil: "domcontentloaded" });
    // The sidebar's Memory tab, advertised in the gateway hello.
    const tabLink = await page.waitForSelector(`pierce/a[href$="/memory"]`, { timeout: 60_000 });
    assert.equal((await tabLink.evaluate((a) => a.textContent)).trim(), "Memory");
    await page.goto(`${base}/memory`, { waitUntil: "domcontentloaded" });
    const frameEl = await page.waitForSelector("pierce/iframe.plugin-tab-embed__frame", { timeout: 60_000 });
    assert.equal(await frameEl.evaluate((f) => f.getAttribute("src")), `${ROUTE}/`);
    assert.ok(!(await frameEl.evaluate((f) => f.getAttribute("src"))).includes(env.gatewayToken), "the token is in the frame's URL");
    const sandbox = await frameEl.evaluate((f) => f.getAttribute("sandbox"));
    const frame = await frameEl.contentFrame();
    assert.ok(frame, "no frame");

    // Sessions: the session, with its figures.
    page.on("response", (r) => {
      if (r.status() >= 400) consoleErrors.push(`HTTP ${r.status()} ${r.url()}`);
    });
    page.on("requestfailed", (r) => consoleErrors.push(`request failed ${r.url()}: ${r.failure()?.errorText}`));
    try {
      await frame.waitForSelector("tr[data-test=session-row]", { timeout: 60_000 });
    } catch (err) {
      const html = await frame.content().catch((e) => `(no content: ${e.message})`);
      throw new Error(`no session row in the frame (sandbox=${sandbox}):\n${html.slice(0, 3000)}\nconsole/network:\n${consoleErrors.join("\n")}`, { cause: err });
    }
    await frame.waitForSelector("main[data-view=sessions][data-state=ready]", { timeout: 30_000 });
    const rows = await frame.$$eval("tr[data-test=session-row]", (trs) => trs.map((tr) => ({ session: tr.dataset.session, text: tr.textContent })));
    assert.ok(rows.length >= 1, "no session rows");
    const shot = path.join(artifactsDir(), "memory-tab.png");
    await page.screenshot({ path: shot });
    console.log(`memory tab screenshot: ${shot}`);

    // Open in chat: the dashboard navigates to the session.
    const chatBtn = await frame.$(`[data-test=open-chat][data-key="${KEY}"]`);
    assert.ok(chatBtn, `no "open in chat" for ${KEY}`);

    // The DAG: a summary, expanded down to a raw message.
    await frame.click(`tr[data-test=session-row] [data-test=open-dag]`);
    await frame.waitForSelector("main[data-view=dag][data-state=ready]", { timeout: 30_000 });
    const node = await frame.waitForSelector("[data-test=summary-node]", { timeout: 10_000 });
    await (await node.$("[data-test=expand]")).click();
    // Down the DAG: expand the first child summary until raw messages show.
    await frame.waitForFunction((el) => el.getAttribute("aria-expanded") === "true", { timeout: 15_000 }, await node.$("[data-test=expand]"));
    for (let i = 0; i < 6 && !(await frame.$("[data-test=raw-message]")); i++) {
      const btn = await frame.waitForSelector(".children [data-test=expand][aria-expanded=false]", { timeout: 15_000 });
      await btn.click();
      await frame.waitForFunction((el) => el.getAttribute("aria-expanded") === "true", { timeout: 15_000 }, btn);
    }
    const raw = await frame.waitForSelector("[data-test=raw-message]", { timeout: 15_000 });
    await (await raw.$("[data-test=show-raw]")).click();
    await frame.waitForSelector("[data-test=raw-message][data-loaded='1'] [data-test=raw-bytes]:not([hidden])", { timeout: 15_000 });
    const rawBytes = await frame.$eval("[data-test=raw-message][data-loaded='1'] [data-test=raw-bytes]", (el) => el.textContent);
    assert.ok(JSON.parse(rawBytes).role, `the raw message is not the stored JSON: ${rawBytes.slice(0, 200)}`);
    const summaryText = await frame.$eval(".summary-text", (el) => el.textContent);
    assert.ok(summaryText.length > 0, "empty summary text");
    await page.screenshot({ path: path.join(artifactsDir(), "memory-tab-dag.png") });

    // The context and why.
    await frame.click(`a[href^="#/context/"]`);
    await frame.waitForSelector("main[data-view=context][data-state=ready]", { timeout: 30_000 });
    const parts = await frame.$$eval("[data-test=part]", (ps) => ps.map((p) => p.dataset.part));
    assert.deepEqual(parts, ["summaries", "tail", "recall", "system"]);
    // The last turn's assemble, as the engine process recorded it.
    const lastFound = await frame.$eval("[data-test=last-assemble]", (el) => el.dataset.found);
    assert.equal(lastFound, "1", "the session's last assemble is not shown");
    const lastPrompt = await frame.$eval("[data-test=last-prompt]", (el) => el.textContent);
    assert.ok(lastPrompt.includes(`${MARKER}-4`), `the last assemble's prompt: ${lastPrompt.slice(0, 120)}`);
    const cut = await frame.$eval("[data-test=context-cut]", (el) => el.textContent);
    assert.ok(/cut/i.test(cut), `no explanation of what was cut: ${cut}`);
    const recallLine = await frame.$eval(".recall-status", (el) => el.textContent);
    assert.match(recallLine, /Recall:/);
    const summaryParts = await frame.$$eval("[data-test=context-message][data-part=summaries]", (els) => els.length);
    assert.ok(summaryParts >= 1, "the context holds no summary");
    await page.screenshot({ path: path.join(artifactsDir(), "memory-tab-context.png") });

    // Search: a grep hit, and the hostile message shown as text.
    await page.evaluate(() => 0);
    await frame.evaluate(() => {
      location.hash = "#/search";
    });
    await frame.waitForSelector("main[data-view=search][data-state=ready]", { timeout: 30_000 });
    await frame.type("[data-test=search-query]", `${MARKER}-HTML`);
    await frame.click("[data-test=search-go]");
    await frame.waitForSelector("[data-test=grep-hit]", { timeout: 30_000 });
    await frame.waitForSelector("main[data-view=search][data-state=ready]", { timeout: 30_000 });
    const hits = await frame.$$eval("[data-test=grep-hit]", (els) => els.map((e) => e.textContent));
    assert.ok(hits.some((t) => t.includes("</textarea><script>")), `the hostile text is not shown as text: ${hits.join(" | ").slice(0, 500)}`);
    assert.equal(await frame.evaluate(() => window.__pwned), undefined, "a stored <script> ran");
    assert.equal(await frame.$$eval("main script, main textarea + b", (els) => els.length), 0, "stored HTML became elements");
    await page.screenshot({ path: path.join(artifactsDir(), "memory-tab-search.png") });

    // Back to sessions, then open the session in chat.
    await frame.evaluate(() => {
      location.hash = "#/sessions";
    });
    await frame.waitForSelector("main[data-view=sessions][data-state=ready]", { timeout: 30_000 });
    const before = page.url();
    await frame.click(`[data-test=open-chat][data-key="${KEY}"]`);
    await page.waitForFunction((b) => location.href !== b, { timeout: 15_000 }, before);
    const after = page.url();
    console.log(`open in chat: ${before} -> ${after}`);
    assert.equal(new URL(after).pathname, "/chat/main/e2e-memtab", `the dashboard did not open ${KEY} in chat`);

    // No request the grant refused, no CSP violation.
    const refused = consoleErrors.filter((e) => /Content Security Policy|403|401|CORS|blocked/i.test(e));
    assert.deepEqual(refused, [], `the frame hit refusals: ${refused.join("\n")} (sandbox=${sandbox})`);
    await page.close();
  });
});
